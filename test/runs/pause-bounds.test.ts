// What one run's pauses may hold and cost (found by an audit): the timeout sweep rewrote the whole pause record
// once per point from a stale copy (a run of 1,000 points took it 125 s, quadratic, while other tenants waited),
// sweeps overlapped, and a run could hold as many points as its step budget allowed; pause forms were never
// measured, so 130 human blocks of 1.9 MB each answered 243 MB and stored about 1 GB.
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { Queryable } from '../../src/db/database.js';
import { startTestServer, type TestServer } from '../support/harness.js';
import { deploy, fn, start, waitForJob } from '../support/workflows.js';

let t: TestServer;
/** Small bounds: 6 pause points a run, a block output cap of 4 KiB, results of 16 KiB. */
let small: TestServer;
beforeAll(async () => {
  t = await startTestServer();
  small = await startTestServer({
    env: { WEFT_MAX_PAUSE_POINTS: '6', WEFT_MAX_BLOCK_OUTPUT_BYTES: '4096', WEFT_MAX_RUN_RESULT_BYTES: '16384' },
  });
});
afterAll(async () => {
  await t?.close();
  await small?.close();
});

const human = (id: string, name: string, config: Record<string, unknown> = {}) => ({ id, type: 'human', name, config: { fields: [], ...config } });
/** A block answering `<start.n>` characters: a form's message. */
const text = fn('text', 'return "x".repeat(<start.n> ?? 1)', 'Text');
/** A parallel of `count` branches after `text`. */
const fanOut = (count: number, blocks: unknown[], edges: unknown[] = []) => ({
  blocks: [start([{ name: 'n', type: 'number' }]), text,
    { id: 'fan', type: 'parallel', name: 'Fan', config: { kind: 'count', count }, blocks, edges }],
  edges: [{ from: 'start', to: 'text' }, { from: 'text', to: 'fan' }],
});
const resume = (s: TestServer, wf: string, exec: string, contextId: string) =>
  s.call('POST', `/api/resume/${wf}/${exec}/${encodeURIComponent(contextId)}`, { input: {} });

/** Counts the statements that write pause records and runs' states, in every transaction of the server. */
function countWrites(s: TestServer) {
  const db = s.server.ctx.db;
  const counts = { pauseRecords: 0, runStates: 0 };
  const counting = (q: Queryable): Queryable => ({
    query: <T,>(text: string, params?: readonly unknown[]) => {
      if (/^\s*UPDATE paused_executions\b/i.test(text)) counts.pauseRecords++;
      if (/^\s*UPDATE executions\b/i.test(text)) counts.runStates++;
      return q.query<T>(text, params);
    },
    exec: (text: string) => q.exec(text),
  });
  const tx = db.tx.bind(db);
  const spy = vi.spyOn(db, 'tx').mockImplementation(((fn: (q: Queryable) => Promise<unknown>) => tx((q) => fn(counting(q)))) as typeof db.tx);
  return { counts, restore: () => spy.mockRestore() };
}

describe('the pause timeout sweep', () => {
  it('fails every due point of a run in one write of its record, and fails the run once', async () => {
    const pauses = t.server.services.runs.pauses;
    pauses.stop(); // this test runs the sweep itself
    const writes = countWrites(t);
    try {
      const wf = await deploy(t, 'sweep-fail', fanOut(30, [human('gate', 'Gate', { timeoutSeconds: 1, onTimeout: 'fail' })]));
      const run = await t.call('POST', `/api/workflows/${wf}/execute`, {});
      expect(run.status, run.text).toBe(200);
      expect(run.body.output.pauseCount).toBe(30);
      const exec: string = run.body.executionId;

      // Once every point's timeout (a second after it was registered) has passed, one pass fails all 30.
      const registered = (await t.call('GET', `/api/resume/${wf}/${exec}`)).body.pausePoints.map((p: { registeredAt: string }) => Date.parse(p.registeredAt));
      await new Promise((resolve) => setTimeout(resolve, Math.max(...registered) + 1_200 - Date.now()));
      writes.counts.pauseRecords = 0;
      writes.counts.runStates = 0;
      expect(await pauses.fireTimeouts()).toBe(30);
      expect(writes.counts).toEqual({ pauseRecords: 1, runStates: 1 });

      const rec = await t.call('GET', `/api/resume/${wf}/${exec}`);
      expect(rec.body.status).toBe('failed');
      expect(rec.body.pausePoints.map((p: { resumeStatus: string }) => p.resumeStatus)).toEqual(Array(30).fill('failed'));
      const log = await t.call('GET', `/api/v1/logs/${exec}`);
      expect(log.body.data.status).toBe('failed');
      expect(log.body.data.error).toMatch(/Block "gate" timed out waiting for a human response/);
      // Nothing is left for a later pass.
      expect(await pauses.fireTimeouts()).toBe(0);
    } finally {
      writes.restore();
      pauses.start();
    }
  }, 60_000);

  it('never starts a sweep while the last one still runs', async () => {
    const pauses = t.server.services.runs.pauses;
    pauses.stop();
    let finish = () => {};
    const slow = new Promise<number>((resolve) => {
      finish = () => resolve(0);
    });
    const sweeps = vi.spyOn(pauses, 'fireTimeouts').mockReturnValue(slow);
    const claims = vi.spyOn(pauses, 'releaseLapsedClaims').mockResolvedValue(undefined);
    try {
      pauses.start(5);
      // Many ticks pass (each releases lapsed claims, which end at once) while the first sweep runs.
      await expect.poll(() => claims.mock.calls.length, { timeout: 15_000, interval: 10 }).toBeGreaterThanOrEqual(5);
      expect(sweeps).toHaveBeenCalledTimes(1);
      finish();
      await expect.poll(() => sweeps.mock.calls.length, { timeout: 15_000, interval: 10 }).toBeGreaterThanOrEqual(2);
    } finally {
      pauses.stop();
      sweeps.mockRestore();
      claims.mockRestore();
      pauses.start();
    }
  }, 60_000);
});

describe('pause points a run may hold', () => {
  it('are 100 by default: the block past them fails the run naming the limit', async () => {
    const ok = await deploy(t, 'hundred-points', fanOut(100, [human('ask', 'Ask')]));
    const paused = await t.call('POST', `/api/workflows/${ok}/execute`, {});
    expect(paused.status, paused.text.slice(0, 300)).toBe(200);
    expect(paused.body.output.pauseCount).toBe(100);

    const over = await deploy(t, 'too-many-points', fanOut(101, [human('ask', 'Ask')]));
    const failed = await t.call('POST', `/api/workflows/${over}/execute`, {});
    expect(failed.status, failed.text.slice(0, 300)).toBe(500);
    expect(failed.body.error).toMatch(/Pause point limit exceeded: the run would hold more than 100 pause points \(maxPausePoints\); stopped at block "Ask"/);
    expect((await t.call('GET', `/api/resume/${over}/${failed.body.executionId}`)).status).toBe(404);
  }, 60_000);

  it('follow WEFT_MAX_PAUSE_POINTS', async () => {
    const over = await deploy(small, 'seven-points', fanOut(7, [human('ask', 'Ask')]));
    const failed = await small.call('POST', `/api/workflows/${over}/execute`, {});
    expect(failed.status, failed.text.slice(0, 300)).toBe(500);
    expect(failed.body.error).toMatch(/more than 6 pause points/);
    const fine = await deploy(small, 'six-points', fanOut(6, [human('ask', 'Ask')]));
    expect((await small.call('POST', `/api/workflows/${fine}/execute`, {})).body.output.pauseCount).toBe(6);
  });

  it('count the points resumes add to the record: the resume that would pass the limit fails', async () => {
    // A hundred branches, each a gate and then a check: a resumed gate adds its check to the record.
    const wf = await deploy(t, 'growing-points', {
      ...fanOut(100, [human('gate', 'Gate'), human('check', 'Check')]),
      edges: [{ from: 'start', to: 'text' }, { from: 'text', to: 'fan' }, { from: 'gate', to: 'check' }],
    });
    const run = await t.call('POST', `/api/workflows/${wf}/execute`, {});
    expect(run.status, run.text.slice(0, 300)).toBe(200);
    expect(run.body.output.pauseCount).toBe(100);
    const exec: string = run.body.executionId;
    const resumed = await resume(t, wf, exec, 'gate_p0');
    expect(resumed.status, resumed.text.slice(0, 300)).toBe(200);
    expect(resumed.body).toMatchObject({ success: false, status: 'failed' });
    expect(resumed.body.error).toMatch(/The run would hold 101 pause points, over the limit of 100 \(WEFT_MAX_PAUSE_POINTS\)/);
    const rec = await t.call('GET', `/api/resume/${wf}/${exec}`);
    expect(rec.body.status).toBe('failed');
    expect(rec.body.pausePoints).toHaveLength(100);
    expect(rec.body.pausePoints.find((p: { contextId: string }) => p.contextId === 'gate_p0').resumeStatus).toBe('failed');
    expect((await t.call('GET', `/api/v1/logs/${exec}`)).body.data).toMatchObject({ status: 'failed', output: null });
  }, 60_000);
});

describe('the size of a pause', () => {
  it('a pause form over the block output cap fails its block, which an error edge may catch', async () => {
    // Two texts of 2,500 characters make a message of 5,000.
    const blocks = [start([{ name: 'n', type: 'number' }]), text, human('ask', 'Ask', { message: '<text><text>' })];
    const wf = await deploy(small, 'big-form', { blocks, edges: [{ from: 'start', to: 'text' }, { from: 'text', to: 'ask' }] });
    const failed = await small.call('POST', `/api/workflows/${wf}/execute`, { n: 2500 });
    expect(failed.status, failed.text.slice(0, 300)).toBe(500);
    expect(failed.body.error).toMatch(/Block "Ask" output is \d+ bytes, over the limit of 4096 bytes \(maxBlockOutputBytes\)/);

    const caught = await deploy(small, 'big-form-caught', {
      blocks: [...blocks, fn('handler', 'return "handled"', 'Handler')],
      edges: [{ from: 'start', to: 'text' }, { from: 'text', to: 'ask' }, { from: 'ask', to: 'handler', on: 'error' }],
    });
    const handled = await small.call('POST', `/api/workflows/${caught}/execute`, { n: 2500 });
    expect(handled.status, handled.text.slice(0, 300)).toBe(200);
    expect(handled.body.output).toBe('handled');
  });

  it('pause forms together over the result limit fail the run, nothing of the pause stored (sync, async, v2)', async () => {
    // Six forms of 3,000 characters each: every one within the block cap, together past 16 KiB.
    const wf = await deploy(small, 'big-pause', fanOut(6, [human('ask', 'Ask', { message: '<text>' })]));
    const message = /The run's pause is about \d+ bytes \(6 pause points with their forms and resume links\), over the limit of 16384 bytes \(WEFT_MAX_RUN_RESULT_BYTES\)/;

    const sync = await small.call('POST', `/api/workflows/${wf}/execute`, { n: 3000 });
    expect(sync.status, sync.text.slice(0, 300)).toBe(500);
    expect(sync.body.error).toMatch(message);
    expect((await small.call('GET', `/api/resume/${wf}/${sync.body.executionId}`)).status).toBe(404);
    const log = await small.call('GET', `/api/v1/logs/${sync.body.executionId}`);
    expect(log.body.data).toMatchObject({ status: 'failed', output: null });

    const accepted = await small.call('POST', `/api/workflows/${wf}/execute`, { n: 3000, async: true });
    expect(accepted.status).toBe(202);
    const job = await waitForJob(small, accepted.body.taskId);
    expect(job.status).toBe('failed');
    expect(JSON.stringify(job)).toMatch(message);
    expect((await small.call('GET', `/api/resume/${wf}/${accepted.body.taskId}`)).status).toBe(404);

    const v2 = await small.call('POST', `/api/v2/workflows/${wf}/execute`, { input: { n: 3000 } });
    expect(v2.status).toBe(200);
    expect(v2.body.data.status).toBe('failed');
    expect(v2.body.data.error.message).toMatch(message);

    // Small forms pause as before.
    const fine = await small.call('POST', `/api/workflows/${wf}/execute`, { n: 100 });
    expect(fine.status, fine.text.slice(0, 300)).toBe(200);
    expect(fine.body.output.pauseCount).toBe(6);
  }, 60_000);

  it('a pause record that resumes grow past the result limit fails the resume that would pass it', async () => {
    // A chain of five forms of 900,000 characters (the default limits: 4 MiB a block output and a result): each
    // pause answers one form, the record keeps every one; the fifth would make it 4.5 MB.
    const names = ['a', 'b', 'c', 'd', 'e'];
    const wf = await deploy(t, 'growing-record', {
      blocks: [start([{ name: 'n', type: 'number' }]), text, ...names.map((n) => human(n, n.toUpperCase(), { message: '<text>' }))],
      edges: [{ from: 'start', to: 'text' }, { from: 'text', to: 'a' }, ...names.slice(1).map((n, i) => ({ from: names[i], to: n }))],
    });
    const run = await t.call('POST', `/api/workflows/${wf}/execute`, { n: 900_000 });
    expect(run.status, run.text.slice(0, 300)).toBe(200);
    const exec: string = run.body.executionId;
    for (const n of ['a', 'b', 'c']) expect((await resume(t, wf, exec, n)).body.status).toBe('paused');
    const fourth = await resume(t, wf, exec, 'd');
    expect(fourth.body).toMatchObject({ success: false, status: 'failed' });
    expect(fourth.body.error).toMatch(/The run's pause record is \d+ bytes, over the limit of 4194304 bytes \(WEFT_MAX_RUN_RESULT_BYTES\)/);
    const rec = await t.call('GET', `/api/resume/${wf}/${exec}`);
    expect(rec.body.status).toBe('failed');
    expect(rec.body.pausePoints).toHaveLength(4);
    expect((await t.call('GET', `/api/v1/logs/${exec}`)).body.data).toMatchObject({ status: 'failed', output: null });
  }, 60_000);
});
