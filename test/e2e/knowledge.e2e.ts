// Knowledge in a real browser: create a base, upload documents (progress per file), watch them get
// processed to completed, and try a search that ranks their chunks.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchBrowser, newPage, pageErrors as allPageErrors, shot, signInWithApi, startApp, type Browser, type E2eApp, type Page } from './support/index.js';

/** Uncaught exceptions and console errors, except failed resource loads (asserted through what the page shows). */
const pageErrors = (page: Page) => allPageErrors(page).filter((e) => !e.startsWith('console: Failed to load resource'));

let app: E2eApp;
let browser: Browser;
let dir: string;

beforeAll(async () => {
  app = await startApp();
  browser = await launchBrowser();
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'weft-e2e-docs-'));
  fs.writeFileSync(path.join(dir, 'handbook.md'), [
    '# Staff handbook', '', '## Leave', '', 'Every employee gets 25 days of paid annual leave a year, plus public holidays.', '',
    '## Expenses', '', 'Travel expenses are reimbursed within 30 days when the receipts are submitted.', '',
  ].join('\n'));
  fs.writeFileSync(path.join(dir, 'menu.txt'), 'The canteen serves soup on Mondays and pasta on Fridays.\n');
  fs.writeFileSync(path.join(dir, 'binary.exe'), Buffer.from([0x4d, 0x5a, 0x90, 0x00]));
});

afterAll(async () => {
  await browser?.close();
  await app?.stop();
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

describe('knowledge', () => {
  it('uploads documents with progress, sees them completed, and searches them', async () => {
    const page = await newPage(browser, app);
    await signInWithApi(page, app);
    await page.goto('/knowledge');
    await page.getByRole('button', { name: 'New knowledge base' }).first().click();
    await page.getByLabel('Name').fill('Handbook');
    await page.getByRole('button', { name: 'Create', exact: true }).click();
    await page.waitForURL(/\/knowledge\/[0-9a-f-]{36}$/);
    await page.getByRole('heading', { name: 'Handbook', level: 1 }).waitFor();

    await page.getByLabel('Choose files').setInputFiles([path.join(dir, 'handbook.md'), path.join(dir, 'menu.txt')]);
    const uploads = page.getByRole('list', { name: 'Uploads' });
    await uploads.getByRole('listitem').nth(1).waitFor();
    await shot(page, 'uploading');
    // Each upload reaches the server, then its processing status is followed to completed.
    await uploads.getByRole('listitem', { name: 'handbook.md: completed' }).waitFor({ timeout: 60_000 });
    await uploads.getByRole('listitem', { name: 'menu.txt: completed' }).waitFor({ timeout: 60_000 });
    expect(await uploads.locator('progress').evaluateAll((bars) => bars.map((b) => b.getAttribute('value')))).toEqual(['100', '100']);
    const docs = page.getByRole('table');
    await docs.getByRole('row', { name: /handbook\.md/ }).getByText('completed').waitFor();
    await shot(page, 'documents-completed');

    // The API agrees: both documents are completed with chunks.
    const kbId = page.url().split('/').pop() as string;
    const listed = await app.api('GET', `/api/v1/knowledge/${kbId}/documents?workspaceId=${app.workspaceId}`);
    expect(listed.body.data.documents.map((d: { processingStatus: string }) => d.processingStatus)).toEqual(['completed', 'completed']);

    // A file type the server does not take fails its upload with the server's reason.
    await page.getByLabel('Choose files').setInputFiles(path.join(dir, 'binary.exe'));
    await uploads.getByRole('listitem', { name: 'binary.exe: failed' }).getByRole('alert').waitFor();

    await page.getByLabel('Question or text').fill('how many days of holiday do we get?');
    await page.getByRole('button', { name: 'Search', exact: true }).click();
    const results = page.getByRole('list', { name: /results, best first/ });
    await results.waitFor();
    const first = results.getByRole('listitem').first();
    expect(await first.innerText()).toContain('handbook.md');
    expect(await first.innerText()).toContain('25 days of paid annual leave');
    const scores = await results.locator('.kn-score .mono').allInnerTexts();
    const values = scores.map((s) => Number(s.replace('score ', '')));
    expect(values.length).toBeGreaterThan(0);
    expect([...values].sort((a, b) => b - a)).toEqual(values);
    await shot(page, 'search-results');
    expect(pageErrors(page)).toEqual([]);
  });
});
