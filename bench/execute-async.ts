import { startTestServer } from '../test/support/harness.js';
import { deploy, fn, start } from '../test/support/workflows.js';
import { machine, percentile } from './support.js';

/**
 * Enqueues N async runs of start -> function over HTTP and measures jobs/s from the first enqueue
 * to the last completion, plus the wait in queue (created -> started) from the execution rows.
 */
export async function run(): Promise<Record<string, unknown>> {
  const total = Number(process.env.BENCH_RUNS ?? 2000);
  // REDIS_URL (with PostgreSQL) dispatches through BullMQ instead of the in-process queue.
  const redis: Record<string, string> = process.env.REDIS_URL ? { REDIS_URL: process.env.REDIS_URL } : {};
  const t = await startTestServer({ env: { WEFT_LIMITS: 'off', WEFT_DEFAULT_PLAN: 'enterprise', ...redis } });
  try {
    const id = await deploy(t, 'bench-async', { blocks: [start([{ name: 'i', type: 'number' }]), fn('f', 'return { i: <start.i> }', 'F')], edges: [{ from: 'start', to: 'f' }] });
    const began = performance.now();
    const concurrency = 20;
    let next = 0;
    await Promise.all(Array.from({ length: concurrency }, async () => {
      while (next < total) {
        const i = next++;
        const r = await t.call('POST', `/api/workflows/${id}/execute`, { i, async: true });
        if (r.status !== 202) throw new Error(`enqueue failed: ${r.status} ${r.text}`);
      }
    }));
    const enqueued = performance.now();
    for (;;) {
      const rows = await t.server.ctx.db.query<{ n: number }>(
        "SELECT count(*)::int AS n FROM executions WHERE workflow_id = $1 AND status IN ('completed', 'failed')", [id]);
      if (rows[0].n >= total) break;
      await new Promise((r) => setTimeout(r, 20));
    }
    const finished = performance.now();
    const waits = (await t.server.ctx.db.query<{ wait: number; failed: boolean }>(
      `SELECT EXTRACT(EPOCH FROM (started_at - created_at)) * 1000 AS wait, status = 'failed' AS failed FROM executions WHERE workflow_id = $1`, [id]));
    const sorted = waits.map((w) => Number(w.wait)).sort((a, b) => a - b);

    // Dispatch latency below saturation: one run at a time, each waited for, so no backlog builds.
    const paced = await deploy(t, 'bench-async-paced', { blocks: [start([{ name: 'i', type: 'number' }]), fn('f', 'return { i: <start.i> }', 'F')], edges: [{ from: 'start', to: 'f' }] });
    for (let i = 0; i < 200; i++) {
      const r = await t.call('POST', `/api/workflows/${paced}/execute`, { i, async: true });
      for (;;) {
        const rows = await t.server.ctx.db.query<{ status: string }>('SELECT status FROM executions WHERE id = $1', [r.body.executionId]);
        if (rows[0]?.status === 'completed' || rows[0]?.status === 'failed') break;
        await new Promise((res) => setImmediate(res));
      }
    }
    const pacedWaits = (await t.server.ctx.db.query<{ wait: number }>(
      'SELECT EXTRACT(EPOCH FROM (started_at - created_at)) * 1000 AS wait FROM executions WHERE workflow_id = $1', [paced]))
      .map((w) => Number(w.wait)).sort((a, b) => a - b);
    return {
      machine: machine(),
      database: t.server.ctx.db.mode,
      queue: process.env.REDIS_URL && t.server.ctx.db.mode === 'postgres' ? 'bullmq' : 'in-process',
      runs: total,
      failed: waits.filter((w) => w.failed).length,
      enqueuePerSecond: Math.round(total / ((enqueued - began) / 1000)),
      runsPerSecondEndToEnd: Math.round(total / ((finished - began) / 1000)),
      saturatedQueueWaitP50Ms: +percentile(sorted, 50).toFixed(2),
      saturatedQueueWaitP99Ms: +percentile(sorted, 99).toFixed(2),
      pacedQueueWaitP50Ms: +percentile(pacedWaits, 50).toFixed(2),
      pacedQueueWaitP99Ms: +percentile(pacedWaits, 99).toFixed(2),
    };
  } finally {
    await t.close();
  }
}
