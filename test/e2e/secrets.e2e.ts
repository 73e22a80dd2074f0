// Secrets in a real browser: set one on the Secrets page, reference it in the editor through `{{`
// completion, run the workflow and see `***` where the value would have shown.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchBrowser, newPage, pageErrors as allPageErrors, shot, signInWithApi, startApp, type Browser, type E2eApp, type Page } from './support/index.js';

const pageErrors = (page: Page) => allPageErrors(page).filter((e) => !e.startsWith('console: Failed to load resource'));
const VALUE = 'sk-e2e-7c1d0b9a8f6e5d4c';

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

describe('secrets', () => {
  it('sets a secret on its page, references it in the editor and shows *** in the run', async () => {
    const page = await newPage(browser, app);
    await signInWithApi(page, app);
    await page.goto('/');
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Secrets' }).click();
    await page.getByLabel('Name').fill('API_TOKEN');
    await page.getByLabel('Value').fill(VALUE);
    await page.getByRole('button', { name: 'Save secret' }).click();
    await page.getByRole('status').filter({ hasText: 'Created API_TOKEN' }).waitFor();
    await page.getByRole('table', { name: 'Secrets' }).getByText('API_TOKEN').waitFor();
    expect(await page.locator('body').innerText()).not.toContain(VALUE);
    await shot(page, 'secrets-page');

    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Workflows' }).click();
    await page.getByRole('button', { name: 'New workflow' }).click();
    await page.getByLabel('Workflow name').fill('Uses a secret');
    await page.getByRole('button', { name: 'Create and open' }).click();
    await page.waitForURL(/\/workflows\/[0-9a-f-]{36}$/);
    await node(page, 'start').waitFor();
    await node(page, 'start').click();
    await page.getByRole('button', { name: 'Add function block' }).click();
    await node(page, 'function').waitFor();
    const code = page.getByLabel('Code');
    await code.fill('return { token: ');
    await code.press('End');
    await code.pressSequentially('{{AP');
    await page.getByRole('option', { name: /\{\{API_TOKEN\}\}/ }).waitFor();
    await shot(page, 'secret-autocomplete');
    await code.press('Enter');
    await code.pressSequentially(', length: {{API_TOKEN}}.length }');
    expect(await code.inputValue()).toBe('return { token: {{API_TOKEN}}, length: {{API_TOKEN}}.length }');
    await page.getByRole('button', { name: 'Save', exact: true }).click();
    await page.getByRole('status').filter({ hasText: /^Saved$/ }).waitFor();

    await page.getByRole('tab', { name: 'Run' }).click();
    await page.getByRole('button', { name: 'Run draft', exact: true }).click();
    const output = page.getByTestId('run-output');
    await output.waitFor();
    expect(JSON.parse(await output.innerText())).toEqual({ token: '***', length: VALUE.length });
    await shot(page, 'masked-output');
    expect(await page.locator('body').innerText()).not.toContain(VALUE);

    // The run's timeline shows the block's output masked too; the Secrets page says the secret was used.
    await page.getByRole('link', { name: "Open the run's timeline" }).click();
    await page.getByRole('button', { name: /^function/i }).first().click();
    await page.getByText('"token": "***"').first().waitFor();
    expect(await page.locator('body').innerText()).not.toContain(VALUE);
    await page.goto('/settings/secrets');
    const row = page.getByRole('table', { name: 'Secrets' }).getByRole('row', { name: /API_TOKEN/ });
    await row.waitFor();
    expect(await row.innerText()).not.toContain('never');
    expect(pageErrors(page)).toEqual([]);
  });
});
