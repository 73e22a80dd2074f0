// Tables in a real browser: filter, sort and page rows; edit a cell inline; add a column; import and
// export CSV. Every change is checked through the API, so the page is shown to use it for real.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchBrowser, newPage, pageErrors as allPageErrors, shot, signInWithApi, startApp, type Browser, type E2eApp, type Page } from './support/index.js';

/** Uncaught exceptions and console errors, except failed resource loads (asserted through what the page shows). */
const pageErrors = (page: Page) => allPageErrors(page).filter((e) => !e.startsWith('console: Failed to load resource'));

let app: E2eApp;
let browser: Browser;
let tableId: string;
let dir: string;

const people = [
  { email: 'ada@example.com', plan: 'pro', seats: 5 },
  { email: 'bob@example.com', plan: 'free', seats: 1 },
  { email: 'cyd@example.com', plan: 'pro', seats: 12 },
  { email: 'dee@example.com', plan: 'free', seats: 2 },
  ...Array.from({ length: 30 }, (_, i) => ({ email: `user${String(i).padStart(2, '0')}@example.com`, plan: 'free', seats: 1 })),
];

beforeAll(async () => {
  app = await startApp();
  browser = await launchBrowser();
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'weft-e2e-csv-'));
  const created = await app.api('POST', '/api/v1/tables', {
    workspaceId: app.workspaceId, name: 'signups',
    schema: { columns: [
      { name: 'email', type: 'string', required: true, unique: true },
      { name: 'plan', type: 'select', options: ['free', 'pro'] },
      { name: 'seats', type: 'number' },
    ] },
  });
  expect(created.status, JSON.stringify(created.body)).toBe(200);
  tableId = created.body.data.table.id;
  const inserted = await app.api('POST', `/api/v1/tables/${tableId}/rows`, { workspaceId: app.workspaceId, rows: people });
  expect(inserted.status, JSON.stringify(inserted.body)).toBe(200);
});

afterAll(async () => {
  await browser?.close();
  await app?.stop();
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

const emailsOnPage = async (page: Page) =>
  page.locator('table.tables-grid tbody tr td:first-child').allInnerTexts();

describe('tables', () => {
  it('filters, sorts and pages rows, and edits a cell inline', async () => {
    const page = await newPage(browser, app);
    await signInWithApi(page, app);
    await page.goto('/tables');
    await page.getByRole('link', { name: 'signups' }).click();
    await page.getByRole('heading', { name: 'signups', level: 1 }).waitFor();
    await page.getByText(`Rows 1–25 of ${people.length}`).waitFor();
    await shot(page, 'table-rows');

    // plan = pro AND seats >= 6: only cyd.
    await page.getByRole('button', { name: '+ Add condition' }).click();
    await page.getByLabel('Condition 1: column').selectOption('plan');
    await page.getByLabel('Condition 1: value').selectOption('pro');
    await page.getByRole('button', { name: '+ Add condition' }).click();
    await page.getByLabel('Condition 2: column').selectOption('seats');
    await page.getByLabel('Condition 2: operator').selectOption('$gte');
    await page.getByLabel('Condition 2: value').fill('6');
    await page.getByRole('button', { name: 'Apply filter' }).click();
    await page.getByText('Rows 1–1 of 1').waitFor();
    expect(await emailsOnPage(page)).toEqual(['cyd@example.com']);
    expect(page.url()).toContain('filter=');
    await shot(page, 'table-filtered');

    // Any of the two conditions instead: ada and cyd (pro; cyd also has 12 seats), sorted by seats descending.
    await page.getByLabel('Match').selectOption('any');
    await page.getByRole('button', { name: 'Apply filter' }).click();
    await page.getByText('Rows 1–2 of 2').waitFor();
    await page.getByRole('columnheader', { name: /^seats/ }).getByRole('button').click();
    await page.getByRole('columnheader', { name: /^seats/ }).getByRole('button').click();
    await expect.poll(() => emailsOnPage(page)).toEqual(['cyd@example.com', 'ada@example.com']);
    expect(await page.locator('th[aria-sort="descending"]').innerText()).toContain('seats');

    // A reload keeps filter and sort (they live in the URL).
    await page.reload();
    await expect.poll(() => emailsOnPage(page)).toEqual(['cyd@example.com', 'ada@example.com']);

    // Inline edit: ada's seats 5 -> 7, saved through PATCH; the API shows it.
    await page.getByRole('button', { name: 'seats, row 2: 5. Edit' }).click();
    const editor = page.getByLabel('Edit seats, row 2');
    await editor.fill('7');
    await editor.press('Enter');
    await page.getByRole('button', { name: 'seats, row 2: 7. Edit' }).waitFor();
    const ada = await app.api('GET', `/api/v1/tables/${tableId}/rows?workspaceId=${app.workspaceId}&filter=${encodeURIComponent('{"email":"ada@example.com"}')}`);
    expect(ada.body.data.rows[0].data.seats).toBe(7);

    // A value the server refuses (a duplicate unique email) shows its error and keeps the old value.
    await page.getByRole('button', { name: 'email, row 2: ada@example.com. Edit' }).click();
    await page.getByLabel('Edit email, row 2').fill('cyd@example.com');
    await page.getByLabel('Edit email, row 2').press('Enter');
    await page.getByRole('alert').filter({ hasText: /unique/i }).waitFor();
    await shot(page, 'table-edit-refused');
    await page.getByLabel('Edit email, row 2').press('Escape');

    // Clearing the filter pages through every row.
    await page.getByRole('button', { name: 'Clear', exact: true }).click();
    await page.getByText(`of ${people.length}`, { exact: false }).waitFor();
    await page.getByRole('button', { name: 'Next →' }).click();
    await page.getByText(`Rows 26–${people.length} of ${people.length}`).waitFor();
    expect(pageErrors(page)).toEqual([]);
  });

  it('adds a column, imports rows from CSV and exports them', async () => {
    const page = await newPage(browser, app);
    await signInWithApi(page, app);
    await page.goto(`/tables/${tableId}`);
    await page.getByRole('button', { name: 'Add column' }).click();
    await page.getByLabel('Column name').fill('note');
    await page.getByRole('dialog').getByRole('button', { name: 'Add column' }).click();
    await page.getByRole('columnheader', { name: /^note/ }).waitFor();
    const table = await app.api('GET', `/api/v1/tables/${tableId}?workspaceId=${app.workspaceId}`);
    expect(table.body.data.table.schema.columns.map((c: { name: string }) => c.name)).toEqual(['email', 'plan', 'seats', 'note']);

    const csv = path.join(dir, 'more.csv');
    fs.writeFileSync(csv, 'email,seats,note,unknown\r\neve@example.com,3,"quoted, with a comma",x\r\nfay@example.com,,"two\nlines",y\r\n');
    await page.getByRole('button', { name: 'Import CSV' }).click();
    await page.getByLabel('CSV file').setInputFiles(csv);
    await page.getByText('Columns not in the table, left out: unknown').waitFor();
    await shot(page, 'csv-import-preview');
    await page.getByRole('button', { name: 'Import 2 rows' }).click();
    await page.getByText('Imported 2 rows.').waitFor();
    const fay = await app.api('GET', `/api/v1/tables/${tableId}/rows?workspaceId=${app.workspaceId}&filter=${encodeURIComponent('{"email":"fay@example.com"}')}`);
    expect(fay.body.data.rows[0].data).toEqual({ email: 'fay@example.com', note: 'two\nlines' });

    // Export what the filter shows: the two imported rows, as CSV with a header.
    const filter = JSON.stringify({ m: 'all', c: [['note', '$isNotNull', '']] });
    await page.goto(`/tables/${tableId}?filter=${encodeURIComponent(filter)}&sort=email`);
    await page.getByText('Rows 1–2 of 2').waitFor();
    const [download] = await Promise.all([page.waitForEvent('download'), page.getByRole('button', { name: 'Export CSV' }).click()]);
    const text = fs.readFileSync((await download.path()) as string, 'utf8');
    expect(download.suggestedFilename()).toBe('signups.csv');
    expect(text).toBe('email,plan,seats,note\r\neve@example.com,,3,"quoted, with a comma"\r\nfay@example.com,,,"two\nlines"\r\n');
    await shot(page, 'csv-exported');
    expect(pageErrors(page)).toEqual([]);
  });

  it('picks several options in a multiple select cell, and locks the table', async () => {
    const created = await app.api('POST', '/api/v1/tables', {
      workspaceId: app.workspaceId, name: 'tickets',
      schema: { columns: [
        { name: 'title', type: 'string' },
        { name: 'tags', type: 'select', multiple: true, options: [{ id: 't1', name: 'urgent' }, { id: 't2', name: 'billing' }, { id: 't3', name: 'later' }] },
      ] },
    });
    expect(created.status, JSON.stringify(created.body)).toBe(200);
    const id: string = created.body.data.table.id;
    const inserted = await app.api('POST', `/api/v1/tables/${id}/rows`, { workspaceId: app.workspaceId, data: { title: 'refund', tags: ['billing'] } });
    expect(inserted.status, JSON.stringify(inserted.body)).toBe(200);
    const rows = () => app.api('GET', `/api/v1/tables/${id}/rows?workspaceId=${app.workspaceId}`);

    const page = await newPage(browser, app);
    await signInWithApi(page, app);
    await page.goto(`/tables/${id}`);
    // The cell shows option names, though it holds ids.
    await page.getByLabel('tags, row 1: billing. Choose options').click();
    // Saved on change; the box shows the saved state once the server answers.
    await page.getByRole('checkbox', { name: 'urgent' }).click();
    await expect.poll(() => page.getByRole('checkbox', { name: 'urgent' }).isChecked()).toBe(true);
    await expect.poll(async () => (await rows()).body.data.rows[0].data.tags).toEqual(['t2', 't1']);
    await shot(page, 'multiple-select-cell');

    await page.getByRole('button', { name: 'Locks' }).click();
    await page.getByRole('dialog').getByRole('checkbox', { name: /^Inserts/ }).check();
    await shot(page, 'locks-dialog');
    await page.getByRole('dialog').getByRole('button', { name: 'Save' }).click();
    await page.getByText('inserts locked', { exact: false }).waitFor();
    const table = await app.api('GET', `/api/v1/tables/${id}?workspaceId=${app.workspaceId}`);
    expect(table.body.data.table.locks).toEqual({ schemaLocked: false, insertLocked: true, updateLocked: false, deleteLocked: false });
    const refused = await app.api('POST', `/api/v1/tables/${id}/rows`, { workspaceId: app.workspaceId, data: { title: 'more' } });
    expect(refused.status).toBe(423);
    await shot(page, 'table-locked');
    expect(pageErrors(page)).toEqual([]);
  });
});
