import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../support/harness.js';
import { deploy, fn, start, waitForJob } from '../support/workflows.js';

// How an accepted async run reaches a worker (docs/architecture.md, Run dispatch). Where the worker shares
// the process (the embedded database's in-process queue) a run accepted while a worker slot is free is
// leased by the statement that accepts it, so it waits in no queue; a run accepted while every slot is
// taken is queued and leased when one frees. With PostgreSQL the queue is shared between processes and
// every run is queued first.
let t: TestServer;
beforeAll(async () => {
  t = await startTestServer({ env: { WEFT_WORKER_CONCURRENCY: '2', WEFT_DEFAULT_PLAN: 'enterprise' } });
});
afterAll(async () => {
  await t?.close();
});

interface LogRow { executionId: string; status: string; createdAt: string; startedAt: string | null; endedAt: string | null }

/** The logs of a workflow's runs by execution id. */
async function logsOf(workflowId: string): Promise<Map<string, LogRow>> {
  const r = await t.call('GET', `/api/v1/logs?workspaceId=${t.workspaceId}&workflowId=${workflowId}&limit=100`);
  expect(r.status).toBe(200);
  return new Map((r.body.data as LogRow[]).map((l) => [l.executionId, l]));
}

describe('async dispatch', () => {
  it('a run accepted while a worker slot is free starts as it is accepted (embedded); every run ends once with its own output', async () => {
    const id = await deploy(t, 'dispatch', {
      blocks: [start([{ name: 'n', type: 'number' }]), fn('double', 'return { value: <start.n> * 2 }')],
      edges: [{ from: 'start', to: 'double' }],
    });
    const alone = await t.call('POST', `/api/workflows/${id}/execute`, { n: 1, async: true });
    expect(alone.status).toBe(202);
    expect((await waitForJob(t, alone.body.jobId)).output.output).toEqual({ value: 2 });
    const log = (await logsOf(id)).get(alone.body.executionId)!;
    expect(log.status).toBe('completed');
    if (t.server.ctx.db.mode === 'pglite') expect(log.startedAt).toBe(log.createdAt);
    else expect(Date.parse(log.startedAt!)).toBeGreaterThanOrEqual(Date.parse(log.createdAt));

    // More runs at once than the two slots: some are leased at acceptance, the rest queue; all end once.
    const burst = await Promise.all(Array.from({ length: 12 }, (_, n) => t.call('POST', `/api/workflows/${id}/execute`, { n, async: true })));
    for (const r of burst) expect(r.status).toBe(202);
    const jobs = await Promise.all(burst.map((r) => waitForJob(t, r.body.jobId)));
    expect(jobs.map((j) => j.output.output)).toEqual(Array.from({ length: 12 }, (_, n) => ({ value: n * 2 })));
    const logs = await logsOf(id);
    for (const r of burst) {
      const row = logs.get(r.body.executionId)!;
      expect(row.status).toBe('completed');
      expect(Date.parse(row.startedAt!)).toBeGreaterThanOrEqual(Date.parse(row.createdAt));
    }
  });
});

// Each async run in flight follows the worker's shutdown signal with one listener until it ends, so a busy
// server holds up to WEFT_WORKER_CONCURRENCY of them on purpose. Node warns past ten listeners on one
// signal ("possible memory leak"): an operator must never read that about a server working as designed.
describe('many async runs in flight', () => {
  it('raise no process warning, and every run ends', async () => {
    const busy = await startTestServer({ env: { WEFT_DEFAULT_PLAN: 'enterprise' } });
    const warnings: string[] = [];
    const onWarning = (w: Error) => warnings.push(`${w.name}: ${w.message}`);
    process.on('warning', onWarning);
    try {
      // A run that holds its isolate a few milliseconds, so that runs accepted together overlap.
      const id = await deploy(busy, 'overlapping', {
        blocks: [start([{ name: 'n', type: 'number' }]), fn('spin', 'const until = Date.now() + 5; while (Date.now() < until) {} return { n: <start.n> }')],
        edges: [{ from: 'start', to: 'spin' }],
      });
      const burst = await Promise.all(Array.from({ length: 40 }, (_, n) => busy.call('POST', `/api/workflows/${id}/execute`, { n, async: true })));
      for (const r of burst) expect(r.status).toBe(202);
      const jobs = await Promise.all(burst.map((r) => waitForJob(busy, r.body.jobId)));
      expect(jobs.map((j) => j.output.output)).toEqual(Array.from({ length: 40 }, (_, n) => ({ n })));
      // Warnings are emitted on the next tick of the code that raised them.
      await new Promise((resolve) => setImmediate(resolve));
      expect(warnings.filter((w) => w.startsWith('MaxListenersExceededWarning'))).toEqual([]);
    } finally {
      process.off('warning', onWarning);
      await busy.close();
    }
  });
});
