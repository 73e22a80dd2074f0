// Runs in a real browser: watching an async run's timeline from "running" to its waterfall of blocks,
// each with its input, output and timing; the runs list with its filters.
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchBrowser, newPage, pageErrors as allPageErrors, repoRoot, shot, signInWithApi, startApp, type Browser, type E2eApp, type Page } from './support/index.js';

/** Uncaught exceptions and console errors, except failed resource loads (asserted through what the page shows). */
const pageErrors = (page: Page) => allPageErrors(page).filter((e) => !e.startsWith('console: Failed to load resource'));

const definition = {
  blocks: [
    { id: 'start', type: 'start', name: 'Start', config: { inputFormat: [{ name: 'n', type: 'number', required: true }, { name: 'items', type: 'array' }, { name: 'delay', type: 'number', default: 0 }] } },
    { id: 'upstream', type: 'wait', name: 'Wait for upstream', config: { seconds: '<start.delay>' } },
    { id: 'score', type: 'function', name: 'Score', config: { code: "if (<start.n> < 0) throw new Error('n must not be negative'); return { score: <start.n> * 2 }" } },
    {
      id: 'each', type: 'loop', name: 'Each', config: { kind: 'forEach', items: '<start.items>' },
      blocks: [{ id: 'square', type: 'function', name: 'Square', config: { code: 'return { sq: <loop.currentItem> * <loop.currentItem> }' } }],
    },
    { id: 'route', type: 'condition', name: 'Route', config: { conditions: [{ id: 'high', expression: '<score.score> > 5' }, { id: 'else' }] } },
    { id: 'report', type: 'function', name: 'Report', config: { code: "console.log('reporting', <score.score>); return { level: 'high', score: <score.score>, squares: <each.results> }" } },
    { id: 'quiet', type: 'function', name: 'Quiet', config: { code: "return { level: 'low' }" } },
  ],
  edges: [
    { from: 'start', to: 'upstream' }, { from: 'upstream', to: 'score' }, { from: 'score', to: 'each' }, { from: 'each', to: 'route' },
    { from: 'route', to: 'report', branch: 'high' }, { from: 'route', to: 'quiet', branch: 'else' },
  ],
};

let app: E2eApp;
let browser: Browser;
let workflowId: string;

beforeAll(async () => {
  app = await startApp();
  browser = await launchBrowser();
  const created = await app.api('POST', '/api/v1/workflows', { workspaceId: app.workspaceId, name: 'Nightly scoring', definition });
  expect(created.status, JSON.stringify(created.body)).toBe(201);
  workflowId = created.body.data.workflow.id;
  const deployed = await app.api('POST', `/api/v1/workflows/${workflowId}/deploy`);
  expect(deployed.status, JSON.stringify(deployed.body)).toBe(200);
});

afterAll(async () => {
  await browser?.close();
  await app?.stop();
});

describe('runs', () => {
  it('watches an async run live, then reads its timeline block by block', async () => {
    const queued = await app.api('POST', `/api/workflows/${workflowId}/execute`, { inputs: { n: 4, items: [1, 2, 3], delay: 4 }, async: true });
    expect(queued.status, JSON.stringify(queued.body)).toBe(202);
    const executionId: string = queued.body.executionId;

    // Opened while the run waits on its 4 s block: live, then completed with its waterfall.
    const page = await newPage(browser, app);
    await signInWithApi(page, app);
    await page.goto(`/runs/${executionId}`);
    await page.getByText(/^Live: (waiting in the queue|running for)/).waitFor();
    await shot(page, 'run-live');
    await page.locator('.badge', { hasText: 'completed' }).waitFor({ timeout: 30_000 });
    expect(await page.getByText(/^Live:/).count()).toBe(0);
    const blocks = page.getByRole('list', { name: 'Blocks in the order they started' }).getByRole('button');
    // start, wait, score, each (the loop) and its three squares, route, report; quiet never ran
    expect(await blocks.count()).toBe(9);
    expect(await page.getByRole('button', { name: /^Quiet/ }).count()).toBe(0);
    expect(await page.getByRole('button', { name: /^Square/ }).count()).toBe(3);
    await page.getByText('each[2]').first().waitFor();
    // The wait block's bar is the long one: its row says about 4 s.
    expect(await page.getByRole('button', { name: /^Wait for upstream/ }).innerText()).toMatch(/4\.\d\d s/);

    // Open a block: its input (resolved config), output, console and timing.
    await page.getByRole('button', { name: /^Report/ }).click();
    const detail = page.getByRole('region', { name: 'Details of Report' });
    await detail.waitFor();
    const text = await detail.innerText();
    expect(text).toContain('"level": "high"');
    expect(text).toContain('"score": 8');
    expect(text).toContain('reporting 8');
    expect(text).toMatch(/Duration\s+\d+ ms/);
    await shot(page, 'run-timeline');
    // The run's output on the page is the one the API reports.
    const log = await app.api('GET', `/api/v1/logs/${executionId}`);
    expect(log.body.data.output).toMatchObject({ level: 'high', score: 8 });
    expect(await page.locator('section[aria-labelledby="run-output-h"]').innerText()).toContain('"level": "high"');

    // The README's picture: the summary and the whole waterfall with one block open, in one viewport.
    const readme = await newPage(browser, app, { width: 1280, height: 1000 });
    await signInWithApi(readme, app);
    await readme.goto(`/runs/${executionId}`);
    await readme.getByRole('button', { name: /^Score/ }).click();
    await readme.getByRole('region', { name: 'Details of Score' }).waitFor();
    await readme.locator('h1').scrollIntoViewIfNeeded();
    fs.mkdirSync(path.join(repoRoot, 'docs/screenshots'), { recursive: true });
    await readme.screenshot({ path: path.join(repoRoot, 'docs/screenshots/run-timeline.png') });
    await readme.context().close();
    expect(pageErrors(page)).toEqual([]);
  });

  it('lists runs with filters kept in the URL, and opens one from the list', async () => {
    const failed = await app.api('POST', `/api/workflows/${workflowId}/execute`, { inputs: { n: -1, items: [] } });
    expect(failed.body.success).toBe(false);
    const done = await app.api('POST', `/api/workflows/${workflowId}/execute`, { inputs: { n: 9, items: [] } });
    expect(done.body.success).toBe(true);
    const page = await newPage(browser, app);
    await signInWithApi(page, app);
    await page.goto('/runs');
    const runs = page.getByRole('link', { name: 'Nightly scoring' });
    await expect.poll(() => runs.count()).toBeGreaterThanOrEqual(2);
    const all = await runs.count();
    await shot(page, 'runs-list');

    // Only failed runs: the URL keeps the filter, so a reload (or a shared link) shows the same list.
    await page.getByLabel('Status').selectOption('failed');
    await page.waitForURL(/status=failed/);
    await expect.poll(() => runs.count()).toBe(1);
    await page.reload();
    await expect.poll(() => runs.count()).toBe(1);
    expect(await page.getByRole('table').innerText()).toContain('n must not be negative');
    await shot(page, 'runs-filtered-failed');
    await runs.click();
    await page.getByRole('alert').filter({ hasText: 'Failed in block score' }).waitFor();
    await page.getByRole('button', { name: /^Score/ }).click();
    expect(await page.getByRole('region', { name: 'Details of Score' }).innerText()).toContain('n must not be negative');
    await shot(page, 'run-failed');

    await page.goBack();
    await page.getByRole('button', { name: 'Clear filters' }).click();
    await expect.poll(() => runs.count()).toBe(all);
    expect(pageErrors(page)).toEqual([]);
  });

  it('shows the timeline at a phone width and in dark mode', async () => {
    const run = await app.api('POST', `/api/workflows/${workflowId}/execute`, { inputs: { n: 1, items: [] } });
    expect(run.body.output).toEqual({ level: 'low' });
    expect(run.status).toBe(200);
    const page = await newPage(browser, app, { width: 390, height: 844, colorScheme: 'dark' });
    await signInWithApi(page, app);
    await page.goto(`/runs/${run.body.executionId}`);
    await page.getByRole('button', { name: /^Quiet/ }).waitFor();
    // Nothing wider than the screen: the page does not scroll sideways.
    const overflow = await page.locator('html').evaluate((el) => el.scrollWidth - el.clientWidth);
    expect(overflow).toBeLessThanOrEqual(0);
    await shot(page, 'run-timeline-phone-dark');
    expect(pageErrors(page)).toEqual([]);
  });

  it('answers 404 for a run of no workspace of the user', async () => {
    const page = await newPage(browser, app);
    await signInWithApi(page, app);
    await page.goto('/runs/00000000-0000-4000-8000-000000000000');
    await page.getByRole('heading', { name: 'Run not found' }).waitFor();
    await shot(page, 'run-not-found');
  });
});
