import { request, startTestServer, type TestServer } from '../test/support/harness.js';
import { machine, percentile, runIfMain } from './support.js';

/**
 * Webhook deliveries in `ack` and `result` modes from 20 concurrent clients, 5 % of them repeating an
 * earlier delivery id (`X-GitHub-Delivery`): acknowledged requests/s, latency p50/p99, and how many
 * duplicates started a run (must be 0: runs = distinct deliveries).
 */
async function scenario(t: TestServer, mode: 'ack' | 'result', total: number) {
  const name = `bench-webhook-${mode}`;
  const created = await t.call('POST', '/api/v1/workflows', {
    workspaceId: t.workspaceId, name,
    definition: {
      blocks: [{ id: 'hook', type: 'webhook', name: 'Webhook', config: { path: name, responseMode: mode } }, { id: 'f', type: 'function', name: 'F', config: { code: 'return { i: <webhook.i> }' } }],
      edges: [{ from: 'hook', to: 'f' }],
    },
  });
  const id: string = created.body.data.workflow.id;
  await t.call('POST', `/api/v1/workflows/${id}/deploy`);
  const url = `${t.url}/api/webhooks/trigger/${name}`;
  const sent: string[] = [];
  const latencies: number[] = [];
  let ok = 0;
  let duplicatesSent = 0;
  let next = 0;
  const began = performance.now();
  await Promise.all(Array.from({ length: 20 }, async () => {
    while (next < total) {
      const i = next++;
      let delivery: string;
      if (sent.length > 20 && Math.random() < 0.05) {
        delivery = sent[Math.floor(Math.random() * sent.length)];
        duplicatesSent++;
      } else {
        delivery = `${mode}-${i}`;
        sent.push(delivery);
      }
      const t0 = performance.now();
      const r = await request(url, 'POST', JSON.stringify({ i }), { 'content-type': 'application/json', 'x-github-delivery': delivery });
      latencies.push(performance.now() - t0);
      if (r.status === 200) ok++;
    }
  }));
  const elapsed = (performance.now() - began) / 1000;
  // Runs queued in ack mode finish after their answers: wait for all of them.
  const distinct = new Set(sent).size;
  const deadline = Date.now() + 120_000;
  let runs = 0;
  for (;;) {
    const rows = await t.server.ctx.db.query<{ n: number; done: number }>(
      "SELECT count(*)::int AS n, count(*) FILTER (WHERE status IN ('completed', 'failed'))::int AS done FROM executions WHERE workflow_id = $1", [id]);
    runs = rows[0].n;
    if (rows[0].done >= distinct || Date.now() > deadline) break;
    await new Promise((r) => setTimeout(r, 50));
  }
  await new Promise((r) => setTimeout(r, 500));
  runs = (await t.server.ctx.db.query<{ n: number }>('SELECT count(*)::int AS n FROM executions WHERE workflow_id = $1', [id]))[0].n;
  const sorted = latencies.sort((a, b) => a - b);
  return {
    requests: total,
    acknowledged: ok,
    duplicatesSent,
    acknowledgedPerSecond: Math.round(ok / elapsed),
    p50Ms: +percentile(sorted, 50).toFixed(2),
    p99Ms: +percentile(sorted, 99).toFixed(2),
    distinctDeliveries: distinct,
    runs,
    duplicatesThatStartedARun: Math.max(0, runs - distinct),
  };
}

export async function run(): Promise<Record<string, unknown>> {
  const total = Number(process.env.BENCH_REQUESTS ?? 2000);
  const redis: Record<string, string> = process.env.REDIS_URL ? { REDIS_URL: process.env.REDIS_URL } : {};
  const t = await startTestServer({ env: { WEFT_LIMITS: 'off', WEFT_DEFAULT_PLAN: 'enterprise', ...redis } });
  try {
    return {
      machine: machine(),
      database: t.server.ctx.db.mode,
      ack: await scenario(t, 'ack', total),
      result: await scenario(t, 'result', total),
    };
  } finally {
    await t.close();
  }
}

await runIfMain(import.meta.url, 'webhook-ingest', run);
