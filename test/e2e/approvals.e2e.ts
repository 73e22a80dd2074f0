// Approvals in a real browser: a run paused at a human block is listed with its form; answering it
// resumes the run through the resume API, and a read member's answer is refused by the server.
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchBrowser, newPage, pageErrors as allPageErrors, repoRoot, shot, signInWithApi, startApp, type Browser, type E2eApp, type Page } from './support/index.js';

/** Uncaught exceptions and console errors, except failed resource loads (asserted through what the page shows). */
const pageErrors = (page: Page) => allPageErrors(page).filter((e) => !e.startsWith('console: Failed to load resource'));

let app: E2eApp;
let browser: Browser;
let workflowId: string;

async function pausedRun(item: string, amount: number): Promise<string> {
  const r = await app.api('POST', `/api/workflows/${workflowId}/execute`, { inputs: { item, amount } });
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  expect(r.body.output.data.operation).toBe('human');
  return r.body.executionId as string;
}

beforeAll(async () => {
  app = await startApp();
  browser = await launchBrowser();
  const definition = JSON.parse(fs.readFileSync(path.join(repoRoot, 'examples/human-approval.json'), 'utf8'));
  const created = await app.api('POST', '/api/v1/workflows', { workspaceId: app.workspaceId, name: 'Purchase approval', definition });
  expect(created.status, JSON.stringify(created.body)).toBe(201);
  workflowId = created.body.data.workflow.id;
  expect((await app.api('POST', `/api/v1/workflows/${workflowId}/deploy`)).status).toBe(200);
});

afterAll(async () => {
  await browser?.close();
  await app?.stop();
});

describe('approvals', () => {
  it('answers a paused run from its form, and the run goes on to the approved branch', async () => {
    const executionId = await pausedRun('laptop', 1200);
    const page = await newPage(browser, app);
    await signInWithApi(page, app);
    await page.goto('/approvals');
    const card = page.locator('article', { has: page.getByRole('heading', { name: 'Purchase approval' }) }).filter({ has: page.locator(`[href="/runs/${executionId}"]`) });
    await card.getByRole('heading', { name: 'Approve this purchase?' }).waitFor();
    await shot(page, 'approvals-list');

    // A required yes/no left unanswered is caught in the form, before any request.
    await card.getByRole('button', { name: 'Submit answer' }).click();
    await card.getByText('approved is required: choose Yes or No').waitFor();

    await card.getByRole('radio', { name: 'Yes' }).check();
    await card.getByLabel('comment').fill('within budget');
    await shot(page, 'approval-filled');
    await card.getByRole('button', { name: 'Submit answer' }).click();
    await card.getByText(/Answer received: the run is completed/).waitFor();
    await shot(page, 'approval-answered');

    // The server ran the rest of the workflow with the submitted fields.
    const paused = await app.api('GET', `/api/resume/${workflowId}/${executionId}`);
    expect(paused.body.pausePoints[0].resumeStatus).not.toBe('paused');
    const newRun = await card.getByRole('link', { name: 'Open the run' }).getAttribute('href');
    const runId = decodeURIComponent((newRun ?? '').replace('/runs/', ''));
    const log = await app.api('GET', `/api/v1/logs/${runId}`);
    expect(log.body.data.output).toMatchObject({ status: 'ordered', item: 'laptop', comment: 'within budget' });

    // The run link leads to that run's timeline, which shows the Order block and not Decline.
    await card.getByRole('link', { name: 'Open the run' }).click();
    await page.getByRole('button', { name: /^Order/ }).waitFor();
    expect(await page.getByRole('button', { name: /^Decline/ }).count()).toBe(0);
    await shot(page, 'approved-run');
    expect(pageErrors(page)).toEqual([]);
  });

  it('lets a read member see an approval but the server refuses the answer', async () => {
    const executionId = await pausedRun('chair', 90);
    const reader = await app.createUser({ email: 'reader@example.com', role: 'read', password: 'reader-password-0123' });
    const page = await newPage(browser, app);
    await signInWithApi(page, app, { email: reader.email, password: reader.password });
    await page.goto(`/approvals#${executionId}`);
    await page.getByRole('note').filter({ hasText: 'Your role in this workspace is read' }).waitFor();
    const card = page.locator(`article[id="${executionId}"]`);
    await card.getByRole('radio', { name: 'No' }).check();
    await card.getByRole('button', { name: 'Submit answer' }).click();
    await card.getByRole('alert').filter({ hasText: /not allowed|permission|forbidden|access/i }).waitFor();
    await shot(page, 'approval-refused-for-reader');
    const paused = await app.api('GET', `/api/resume/${workflowId}/${executionId}`);
    expect(paused.body.pausePoints[0].resumeStatus).toBe('paused');
  });
});
