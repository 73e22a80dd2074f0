import { startTestServer } from '../test/support/harness.js';
import { deploy, fn, start } from '../test/support/workflows.js';
import { load, machine } from './support.js';

/**
 * Execute requests/s with limits on versus off, in one run. "On" uses plan limits high enough
 * never to refuse, so the figure is the cost of checking (usage query, bucket, slot, headers).
 */
export async function run(): Promise<Record<string, unknown>> {
  const seconds = Number(process.env.BENCH_SECONDS ?? 5);
  const huge = JSON.stringify({ enterprise: { syncPerMinute: 10_000_000, concurrentExecutions: 100_000, usageLimitUsd: 1_000_000_000 } });
  const results: Record<string, unknown> = { machine: machine() };
  for (const mode of ['off', 'on'] as const) {
    // REDIS_URL puts the buckets and slots in Redis instead of PostgreSQL (or memory, embedded).
    const redis: Record<string, string> = process.env.REDIS_URL ? { REDIS_URL: process.env.REDIS_URL } : {};
    const t = await startTestServer({ env: { WEFT_LIMITS: mode, WEFT_DEFAULT_PLAN: 'enterprise', WEFT_PLAN_LIMITS: huge, ...redis } });
    try {
      const id = await deploy(t, 'bench-limits', {
        blocks: [start([{ name: 'n', type: 'number', default: 1 }]), fn('f', 'return { v: <start.n> + 1 }', 'F')],
        edges: [{ from: 'start', to: 'f' }],
      });
      results.database = t.server.ctx.db.mode;
      results.counters = process.env.REDIS_URL ? 'redis' : t.server.ctx.db.mode === 'postgres' ? 'postgres' : 'memory';
      results[`limits${mode === 'on' ? 'On' : 'Off'}`] = await load(`${t.url}/api/workflows/${id}/execute`, {
        seconds, method: 'POST', headers: { 'x-api-key': t.apiKey, 'content-type': 'application/json' }, body: '{"n":1}',
      });
    } finally {
      await t.close();
    }
  }
  const on = results.limitsOn as { rps: number };
  const off = results.limitsOff as { rps: number };
  results.ratioOnToOff = +(on.rps / off.rps).toFixed(3);
  return results;
}
