import { startTestServer } from '../test/support/harness.js';
import { helloWorld, load, machine, runIfMain } from './support.js';

/** Requests/s and latency of /healthz and an authenticated /api/v1/keys beside a bare Fastify hello-world. */
export async function run(): Promise<Record<string, unknown>> {
  const seconds = Number(process.env.BENCH_SECONDS ?? 5);
  const base = await helloWorld();
  // Limits off: this measures the HTTP and auth path, not the api bucket refusing the load.
  const t = await startTestServer({ env: { WEFT_LIMITS: 'off' } });
  try {
    const baseline = await load(base.url, { seconds });
    const healthz = await load(`${t.url}/healthz`, { seconds });
    const keys = await load(`${t.url}/api/v1/keys?workspaceId=${t.workspaceId}`, { seconds, headers: { 'x-api-key': t.apiKey } });
    return {
      machine: machine(),
      database: t.server.ctx.db.mode,
      connections: 10,
      baseline,
      healthz,
      authenticatedKeysList: keys,
      healthzVsBaseline: +(healthz.rps / baseline.rps).toFixed(3),
      keysVsBaseline: +(keys.rps / baseline.rps).toFixed(3),
    };
  } finally {
    await t.close();
    await base.close();
  }
}

await runIfMain(import.meta.url, 'http-baseline', run);
