// The editor's palette in a real browser: a workflow takes one Start block (the server refuses a second),
// so while it has one the palette's Start entry is unavailable, says why in its tooltip, and adds nothing;
// with the Start block deleted the entry is offered again. The Start input is `message`, as a new Start
// block's default, so the workflow saved with the re-added block still resolves `<start.message>`.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchBrowser, newPage, pageErrors, shot, signInWithApi, startApp, type Browser, type E2eApp, type Page } from './support/index.js';

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

const nodes = (page: Page) => page.locator('.react-flow__node');
const node = (page: Page, blockId: string) => page.locator(`.react-flow__node[data-id="${blockId}"]`);

describe('palette entry blocks', () => {
  it('offers Start only while the workflow has none', async () => {
    const definition = {
      blocks: [
        { id: 'start', type: 'start', name: 'Begin', config: { inputFormat: [{ name: 'message', type: 'string' }] }, position: { x: 60, y: 60 } },
        { id: 'greet', type: 'function', name: 'Greet', config: { code: 'return { hi: <start.message> }' }, position: { x: 340, y: 60 } },
      ],
      edges: [{ from: 'start', to: 'greet' }],
    };
    const created = await app.api('POST', '/api/v1/workflows', { workspaceId: app.workspaceId, name: 'One start', definition });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const id = created.body.data.workflow.id;

    const page = await newPage(browser, app, { width: 1280, height: 800 });
    await signInWithApi(page, app);
    await page.goto(`/workflows/${id}`);
    await node(page, 'greet').waitFor();
    expect(await nodes(page).count()).toBe(2);

    const startEntry = page.getByRole('button', { name: 'Add start block' });
    expect(await startEntry.getAttribute('aria-disabled')).toBe('true');
    expect(await startEntry.getAttribute('title')).toBe('This workflow already has a Start block ("Begin"); a workflow takes only one.');
    await startEntry.getByText('Already in this workflow').waitFor();
    // the other entry types are still offered
    expect(await page.getByRole('button', { name: 'Add webhook block' }).getAttribute('aria-disabled')).toBeNull();

    // Clicking it adds nothing (the server would refuse a second start block). aria-disabled makes
    // Playwright wait for the entry to be enabled, so the click is forced: the entry ignores it.
    await startEntry.click({ force: true });
    await startEntry.hover();
    await shot(page, 'start-unavailable', { fullPage: false });
    expect(await nodes(page).count()).toBe(2);
    expect(await node(page, 'start2').count()).toBe(0);

    // Without its Start block the workflow can take one again.
    await node(page, 'start').click();
    await page.getByRole('button', { name: 'Delete block' }).click();
    await node(page, 'start').waitFor({ state: 'detached' });
    expect(await startEntry.getAttribute('aria-disabled')).toBeNull();
    await page.locator('.react-flow__pane').click({ position: { x: 10, y: 10 } });
    await startEntry.click();
    await node(page, 'start').waitFor();
    expect(await startEntry.getAttribute('aria-disabled')).toBe('true');
    await shot(page, 'start-added-again', { fullPage: false });

    // What the editor now holds is a definition the server takes.
    await page.getByRole('button', { name: 'Save', exact: true }).click();
    const saved = page.getByRole('status').filter({ hasText: /^Saved$/ });
    await saved.or(page.getByRole('alert').first()).waitFor();
    if (!(await saved.isVisible())) await shot(page, 'save-refused', { fullPage: false });
    expect(await saved.isVisible(), await page.getByRole('alert').allInnerTexts().then((t) => t.join(' | '))).toBe(true);
    const stored = (await app.api('GET', `/api/v1/workflows/${id}`)).body.data.workflow.definition;
    expect(stored.blocks.filter((b: { type: string }) => b.type === 'start')).toHaveLength(1);
    expect(pageErrors(page)).toEqual([]);
  });
});
