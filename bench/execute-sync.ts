import { startTestServer } from '../test/support/harness.js';
import { deploy, fn, start } from '../test/support/workflows.js';
import { helloWorld, load, machine } from './support.js';

/** start -> function -> response over HTTP at 10 connections, beside a bare Fastify hello-world in the same run. */
export async function run(): Promise<Record<string, unknown>> {
  const seconds = Number(process.env.BENCH_SECONDS ?? 5);
  const base = await helloWorld();
  const t = await startTestServer({ env: { WEFT_LIMITS: 'off', WEFT_DEFAULT_PLAN: 'enterprise' } });
  try {
    const id = await deploy(t, 'bench-sync', {
      blocks: [
        start([{ name: 'n', type: 'number', default: 1 }]),
        fn('double', 'return { value: <start.n> * 2 }', 'Double'),
        { id: 'reply', type: 'response', name: 'Reply', config: { data: { value: '<double.value>' } } },
      ],
      edges: [{ from: 'start', to: 'double' }, { from: 'double', to: 'reply' }],
    });
    const check = await t.call('POST', `/api/workflows/${id}/execute`, { n: 21 });
    if (check.status !== 200 || check.body.value !== 42) throw new Error(`workflow check failed: ${check.status} ${check.text}`);
    const baseline = await load(base.url, { seconds });
    const execute = await load(`${t.url}/api/workflows/${id}/execute`, {
      seconds, method: 'POST', headers: { 'x-api-key': t.apiKey, 'content-type': 'application/json' }, body: JSON.stringify({ n: 21 }),
    });
    return {
      machine: machine(),
      database: t.server.ctx.db.mode,
      connections: 10,
      baseline,
      executeSync: execute,
      ratioToBaseline: +(execute.rps / baseline.rps).toFixed(4),
    };
  } finally {
    await t.close();
    await base.close();
  }
}
