// The workflow editor in a real browser: create a workflow, build start -> function on the canvas
// (palette, reference autocompletion, a connection dragged between handles), see the server's validation
// error on the offending block, save, run the draft without deploying, deploy, run it from the editor and
// over the API; versions listed with a rollback per version.
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchBrowser, newPage, pageErrors as allPageErrors, repoRoot, shot, signIn, signInWithApi, startApp, type Browser, type E2eApp, type Page } from './support/index.js';

/** Uncaught exceptions and console errors, except failed loads (the refused save is asserted on the page). */
const pageErrors = (page: Page) => allPageErrors(page).filter((e) => !e.startsWith('console: Failed to load resource'));

let app: E2eApp;
let browser: Browser;

beforeAll(async () => {
  app = await startApp();
  browser = await launchBrowser();
});

afterAll(async () => {
  await browser?.close();
  await app?.stop();
});

const node = (page: Page, blockId: string) => page.locator(`.react-flow__node[data-id="${blockId}"]`);

/** Drags a connection from one block's output handle to another block's input handle. */
async function connect(page: Page, from: string, to: string): Promise<void> {
  const source = await node(page, from).locator('.react-flow__handle[data-handleid="out"]').boundingBox();
  const target = await node(page, to).locator('.react-flow__handle[data-handleid="in"]').boundingBox();
  if (!source || !target) throw new Error('handles not on screen');
  await page.mouse.move(source.x + source.width / 2, source.y + source.height / 2);
  await page.mouse.down();
  await page.mouse.move(target.x + target.width / 2, target.y + target.height / 2, { steps: 12 });
  await page.mouse.up();
}

describe('workflow editor', () => {
  it('builds start -> function on the canvas, deploys it and runs it', async () => {
    const page = await newPage(browser, app);
    await signIn(page, app);
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Workflows' }).click();
    await page.getByRole('button', { name: 'New workflow' }).click();
    await page.getByLabel('Workflow name').fill('Greeter');
    await page.getByRole('button', { name: 'Create and open' }).click();
    await page.waitForURL(/\/workflows\/[0-9a-f-]{36}$/);
    const workflowId = page.url().split('/').pop()!;
    await node(page, 'start').waitFor();

    // The start block's input, edited in the form generated from its schema.
    await node(page, 'start').click();
    await page.getByLabel('Name', { exact: true }).first().waitFor();
    const inputName = page.getByRole('group', { name: 'Input format' }).getByLabel('Name');
    await inputName.fill('who');

    // With Start selected, the palette adds a function beside it, already connected.
    await page.getByRole('button', { name: 'Add function block' }).click();
    await node(page, 'function').waitFor();
    const code = page.getByLabel('Code');
    await code.fill("return { greeting: 'hello ' + ");
    await code.press('End');
    await code.pressSequentially('<st');
    const option = page.getByRole('option', { name: /<start\.who>/ });
    await option.waitFor();
    await shot(page, 'reference-autocomplete');
    await code.press('Enter');
    await code.pressSequentially(' }');
    expect(await code.inputValue()).toBe("return { greeting: 'hello ' + <start.who> }");

    // A response block, joined by dragging from the function's output handle.
    await page.locator('.react-flow__pane').click({ position: { x: 10, y: 10 } });
    await page.getByRole('button', { name: 'Add response block' }).click();
    await node(page, 'response').waitFor();
    await page.getByLabel('Data').fill('<function.greeting>');
    await page.getByLabel('Data').blur();
    await page.getByRole('button', { name: 'Fit View' }).click();
    await connect(page, 'function', 'response');
    await page.locator('.react-flow__edge').nth(1).waitFor();
    await shot(page, 'built');

    // A reference to an undeclared input: the server refuses the save and the block shows why.
    await node(page, 'function').click();
    await page.getByLabel('Code').fill("return { greeting: 'hello ' + <start.whom> }");
    await page.getByRole('button', { name: 'Save', exact: true }).click();
    await page.locator('.react-flow__node[data-id="function"] .wf-node.invalid').waitFor();
    expect(await node(page, 'function').innerText()).toContain('unknown field "whom"');
    await page.getByRole('alert').filter({ hasText: 'The server refused the definition' }).waitFor();
    await shot(page, 'validation-error');

    await page.getByLabel('Code').fill("return { greeting: 'hello ' + <start.who> }");
    await page.getByRole('button', { name: 'Save', exact: true }).click();
    await page.getByRole('status').filter({ hasText: /^Saved$/ }).waitFor();
    expect(await page.locator('.wf-node.invalid').count()).toBe(0);

    // What the canvas saved is a plain definition the API serves.
    const saved = await app.api('GET', `/api/v1/workflows/${workflowId}`);
    const def = saved.body.data.workflow.definition;
    expect(def.blocks.map((b: { id: string; type: string }) => `${b.id}:${b.type}`)).toEqual(['start:start', 'function:function', 'response:response']);
    expect(def.edges).toEqual([{ from: 'start', to: 'function' }, { from: 'function', to: 'response' }]);
    expect(def.blocks[0].config.inputFormat[0].name).toBe('who');

    // Not deployed yet: the Run panel runs the saved draft, which deploys nothing.
    await page.getByRole('tab', { name: 'Run' }).click();
    expect(await page.getByRole('button', { name: /^Run deployed/ }).count()).toBe(0);
    await page.getByLabel('who').fill('world');
    await page.getByRole('button', { name: 'Run draft', exact: true }).click();
    const output = page.getByTestId('run-output');
    await output.waitFor();
    expect(JSON.parse(await output.innerText())).toBe('hello world');
    await page.getByText('Ran the draft').waitFor();
    await page.getByText('Response (HTTP 200, set by a response block)').waitFor();
    await shot(page, 'run-result');
    const timeline = page.getByRole('link', { name: "Open the run's timeline" });
    const draftRunId = (await timeline.getAttribute('href'))!.split('/').pop()!;
    const draftLog = await app.api('GET', `/api/v1/logs/${draftRunId}`);
    expect(draftLog.body.data).toMatchObject({ workflowId, trigger: 'manual', status: 'completed' });
    expect((await app.api('GET', `/api/v1/workflows/${workflowId}`)).body.data.workflow.isDeployed).toBe(false);
    expect((await app.api('POST', `/api/workflows/${workflowId}/execute`, { inputs: { who: 'api' } })).status).toBe(403);

    // Deploy from the toolbar, then run the deployed version from the Run panel.
    await page.getByRole('button', { name: 'Deploy', exact: true }).click();
    await page.locator('.editor-toolbar').getByText('Deployed v1').waitFor();
    await page.getByRole('button', { name: 'Run deployed v1' }).click();
    await page.getByText('Ran deployed v1').waitFor();
    expect(JSON.parse(await output.innerText())).toBe('hello world');

    // The deployed workflow answers over the API as the curl example says.
    await page.getByRole('tab', { name: 'Deploy' }).click();
    const curl = await page.getByTestId('curl-example').innerText();
    expect(curl).toContain(`/api/workflows/${workflowId}/execute`);
    const run = await app.api('POST', `/api/workflows/${workflowId}/execute`, { inputs: { who: 'api' } });
    expect(run.status).toBe(200);
    expect(run.body).toBe('hello api');
    await shot(page, 'deploy-panel');

    // An unsaved change runs as the draft (saved first) while the API keeps the deployed v1.
    await page.getByRole('tab', { name: 'Block' }).click();
    await node(page, 'function').click();
    await page.getByLabel('Code').fill("return { greeting: 'hi ' + <start.who> }");
    await page.getByRole('tab', { name: 'Run' }).click();
    await page.getByRole('button', { name: 'Save and run draft' }).click();
    await page.getByText('Ran the draft').waitFor();
    expect(JSON.parse(await output.innerText())).toBe('hi world');
    await page.getByRole('status').filter({ hasText: /^Saved$/ }).waitFor();
    expect((await app.api('POST', `/api/workflows/${workflowId}/execute`, { inputs: { who: 'api' } })).body).toBe('hello api');

    // A second version, then back to the first from the version list.
    await page.getByRole('button', { name: 'Deploy', exact: true }).click();
    await page.locator('.editor-toolbar').getByText('Deployed v2').waitFor();
    expect((await app.api('POST', `/api/workflows/${workflowId}/execute`, { inputs: { who: 'v2' } })).body).toBe('hi v2');
    await page.getByRole('tab', { name: 'Deploy' }).click();
    const versions = page.getByRole('list', { name: 'Deployed versions, newest first' });
    await versions.getByTestId('version-2').getByText('Active').waitFor();
    expect(await versions.getByRole('listitem').count()).toBe(2);
    await shot(page, 'versions');
    await versions.getByTestId('version-1').getByRole('button', { name: 'Roll back to v1' }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Roll back to v1' }).click();
    await page.locator('.editor-toolbar').getByText('Deployed v1').waitFor();
    await versions.getByTestId('version-1').getByText('Active').waitFor();
    await versions.getByTestId('version-2').getByRole('button', { name: 'Activate v2' }).waitFor();
    expect((await app.api('POST', `/api/workflows/${workflowId}/execute`, { inputs: { who: 'v1' } })).body).toBe('hello v1');
    expect(pageErrors(page)).toEqual([]);
  });

  it('shows loops as containers and lays out a definition saved without positions (README screenshot)', async () => {
    // No positions: the editor lays the blocks out by their edges.
    const definition = {
      blocks: [
        { id: 'start', type: 'start', name: 'Start', config: { inputFormat: [{ name: 'numbers', type: 'array', required: true }] } },
        {
          id: 'each', type: 'loop', name: 'Each', config: { kind: 'forEach', items: '<start.numbers>' },
          blocks: [{ id: 'double', type: 'function', name: 'Double', config: { code: 'return { value: <loop.currentItem> * 2 }' } }],
        },
        { id: 'check', type: 'condition', name: 'Check', config: { conditions: [{ id: 'many', title: 'Many results', expression: '<each.results>.length > 3' }, { id: 'else' }] } },
        { id: 'alert', type: 'http', name: 'Alert', config: { url: 'https://hooks.example.com/alert', method: 'POST', body: { results: '<each.results>' } } },
        { id: 'done', type: 'response', name: 'Done', config: { data: { results: '<each.results>' } } },
      ],
      edges: [
        { from: 'start', to: 'each' }, { from: 'each', to: 'check' },
        { from: 'check', to: 'alert', branch: 'many' }, { from: 'check', to: 'done', branch: 'else' },
      ],
    };
    const created = await app.api('POST', '/api/v1/workflows', { workspaceId: app.workspaceId, name: 'Double numbers', definition });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const id = created.body.data.workflow.id;

    const page = await newPage(browser, app, { width: 1440, height: 860 });
    await signInWithApi(page, app);
    await page.goto(`/workflows/${id}`);
    await node(page, 'double').waitFor();
    // The loop is a container holding its child block.
    expect(await page.locator('.react-flow__node[data-id="each"] .wf-container').count()).toBe(1);
    expect(await node(page, 'double').getAttribute('class')).toContain('react-flow__node');
    // The README picture: the condition selected, its form generated from the schema beside the canvas.
    await node(page, 'check').click();
    await page.getByRole('group', { name: 'Conditions' }).waitFor();
    await page.getByRole('button', { name: 'Fit View' }).click();
    await page.waitForTimeout(400);
    const file = await shot(page, 'editor-overview', { fullPage: false });
    fs.mkdirSync(path.join(repoRoot, 'docs/screenshots'), { recursive: true });
    fs.copyFileSync(file, path.join(repoRoot, 'docs/screenshots/editor.png'));

    const dark = await newPage(browser, app, { width: 1280, height: 800, colorScheme: 'dark' });
    await signInWithApi(dark, app);
    await dark.goto(`/workflows/${id}`);
    await node(dark, 'double').waitFor();
    // Inside the loop, references offer the loop's own values.
    await node(dark, 'double').click();
    await dark.getByLabel('Code').press('End');
    await dark.getByLabel('Code').pressSequentially(' // <loop.');
    await dark.getByRole('option', { name: /<loop\.currentItem>/ }).waitFor();
    await shot(dark, 'editor-dark-loop-references', { fullPage: false });
    const phone = await newPage(browser, app, { width: 390, height: 844 });
    await signInWithApi(phone, app);
    await phone.goto(`/workflows/${id}`);
    await node(phone, 'double').waitFor();
    await shot(phone, 'editor-phone');
    expect([...pageErrors(page), ...pageErrors(dark), ...pageErrors(phone)]).toEqual([]);
  });
});
