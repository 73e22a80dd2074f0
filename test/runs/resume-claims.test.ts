// Writes of paused runs and resume claims: a sync run is recorded paused only with its pause record, and
// a resume whose claim was released (its lease lapsed) stops and records nothing, leaving the point resumable.
import http from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Database } from '../../src/db/database.js';
import { withFailingStatements } from '../support/failing-statements.js';
import { startTestServer, type TestServer } from '../support/harness.js';
import { deploy, start } from '../support/workflows.js';

let t: TestServer;
let upstream: http.Server;
let upstreamUrl: string;
let hang = true;
let onHang: (() => void) | undefined;
let onAbandoned: (() => void) | undefined;

beforeAll(async () => {
  upstream = http.createServer((_req, res) => {
    if (hang) {
      onHang?.();
      res.on('close', () => onAbandoned?.());
      return;
    }
    res.setHeader('content-type', 'application/json');
    res.end(JSON.stringify({ shipped: true }));
  });
  await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', () => r()));
  const addr = upstream.address();
  upstreamUrl = `http://127.0.0.1:${typeof addr === 'object' && addr ? addr.port : 0}`;
  t = await startTestServer({ env: { WEFT_ALLOW_PRIVATE_NETWORK: 'true', WEFT_JOB_LEASE_MS: '1000' } });
});
afterAll(async () => {
  await t?.close();
  upstream.closeAllConnections();
  upstream.close();
});

const approval = { id: 'approval', type: 'human', name: 'Approval', config: { message: 'Ship it?', fields: [{ name: 'decision', type: 'string', required: true }] } };
const approveThenShip = () => ({
  blocks: [start(), approval, { id: 'ship', type: 'http', name: 'Ship', config: { url: `${upstreamUrl}/ship` } }],
  edges: [{ from: 'start', to: 'approval' }, { from: 'approval', to: 'ship' }],
});

describe('a sync run that pauses', () => {
  it('is not recorded paused when its pause record cannot be written', async () => {
    const wf = await deploy(t, 'pause-record-fails', { blocks: [start(), approval], edges: [{ from: 'start', to: 'approval' }] });
    const db = t.server.ctx.db as Database;
    // The pause record's insert fails inside its transaction.
    const run = await withFailingStatements(db, (text) => text.includes('INSERT INTO paused_executions'),
      () => t.call('POST', `/api/workflows/${wf}/execute`, {}, { 'x-execution-id': 'pause-record-fails-1' }));
    expect(run.status).toBe(500);
    // No run is left paused without its record (no resume link, no timeout would ever end it).
    const rows = await db.query<{ status: string }>('SELECT status FROM executions WHERE workflow_id = $1', [wf]);
    expect(rows.map((r) => r.status)).not.toContain('paused');
    expect(await db.query('SELECT 1 FROM paused_executions WHERE workflow_id = $1', [wf])).toHaveLength(0);
  });
});

describe('a resume whose claim was released', () => {
  it('stops its run and records nothing; the point is resumed again and completes', async () => {
    const wf = await deploy(t, 'claim-released', approveThenShip());
    const paused = await t.call('POST', `/api/workflows/${wf}/execute`, {});
    expect(paused.body.status).toBe('paused');
    const exec = paused.body.executionId;
    const resumePath = `/api/resume/${wf}/${exec}/approval`;
    const hung = new Promise<void>((r) => (onHang = r));
    const stopped = new Promise<void>((r) => (onAbandoned = r));
    const first = t.call('POST', resumePath, { input: { decision: 'yes' } });
    await hung;
    // As if its holder had stalled past its lease: it holds the claim no more, and the sweep releases it.
    const db = t.server.ctx.db;
    await db.query(`UPDATE resume_queue SET lease_until = now() - interval '1 second' WHERE parent_execution_id = $1 AND status = 'claimed'`, [paused.body.executionId]);
    await stopped; // the holder's next renewal found the claim gone and stopped the run
    const lost = await first;
    expect(lost.status).toBe(409);
    expect(lost.body.error).toMatch(/resume the pause point again/);
    // The sweep releases the lapsed claim (within a second).
    let record = await t.call('GET', `/api/resume/${wf}/${exec}`);
    for (const until = Date.now() + 10_000; record.body.pausePoints[0].resumeStatus === 'resuming' && Date.now() < until;) {
      await new Promise((r) => setTimeout(r, 50));
      record = await t.call('GET', `/api/resume/${wf}/${exec}`);
    }
    expect(record.body.status).toBe('paused');
    expect(record.body.pausePoints[0].resumeStatus).toBe('paused');
    expect(record.body.queue.map((e: { status: string }) => e.status)).toEqual(['failed']);

    hang = false;
    const again = await t.call('POST', resumePath, { input: { decision: 'yes, again' } });
    expect(again.status).toBe(200);
    expect(again.body).toMatchObject({ success: true, status: 'completed', output: { data: { shipped: true } } });
    expect((await t.call('GET', `/api/resume/${wf}/${exec}`)).body.queue.map((e: { status: string }) => e.status)).toEqual(['failed', 'completed']);
  });
});

describe('a sync resume whose run record cannot be written', () => {
  it('spends nothing: the point is not resumed, and once its claim is released it is resumed again', async () => {
    hang = false;
    const wf = await deploy(t, 'resume-record-fails', approveThenShip());
    const paused = await t.call('POST', `/api/workflows/${wf}/execute`, {});
    expect(paused.body.status).toBe('paused');
    const exec = paused.body.executionId;
    const resumePath = `/api/resume/${wf}/${exec}/approval`;
    const db = t.server.ctx.db as Database;
    // The resume's own execution row fails inside the transaction that ends the resume.
    const failed = await withFailingStatements(db, (text, params) => text.includes('INSERT INTO executions') && params?.[5] === 'resume',
      () => t.call('POST', resumePath, { input: { decision: 'yes' } }));
    expect(failed.status).toBe(500);
    // Nothing of the resume's end was written: the point is not spent, the entry not completed, no charge.
    let record = await t.call('GET', `/api/resume/${wf}/${exec}`);
    expect(record.body.status).toBe('paused');
    expect(record.body.pausePoints[0].resumeStatus).not.toBe('resumed');
    expect(record.body.queue.map((e: { status: string }) => e.status)).not.toContain('completed');
    const newId = record.body.queue[0].newExecutionId;
    expect(await db.query('SELECT 1 FROM usage_events WHERE execution_id = $1', [newId])).toHaveLength(0);
    // Its claim lapses (the lease is 1 s here) and is released; the point is resumed again and completes.
    for (const until = Date.now() + 10_000; record.body.pausePoints[0].resumeStatus === 'resuming' && Date.now() < until;) {
      await new Promise((r) => setTimeout(r, 50));
      record = await t.call('GET', `/api/resume/${wf}/${exec}`);
    }
    expect(record.body.pausePoints[0].resumeStatus).toBe('paused');
    const again = await t.call('POST', resumePath, { input: { decision: 'yes, again' } });
    expect(again.status, again.text).toBe(200);
    expect(again.body).toMatchObject({ success: true, status: 'completed', output: { data: { shipped: true } } });
    const log = await t.call('GET', `/api/v1/logs/${again.body.executionId}`);
    expect(log.status).toBe(200);
  });
});
