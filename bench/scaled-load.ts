// scaled-load: the scaled shape on one machine. 2 `weft api` and 2 `weft worker` processes on PostgreSQL,
// dispatching through Redis (BullMQ) and then through PostgreSQL alone, each under 60 s of mixed traffic
// spread over both API processes: sync execute, async execute, webhook trigger (ack mode, a run queued per
// delivery), tables insert and query, and AI gateway chat completions against a local OpenAI-wire upstream
// that answers at once. Per kind: requests/s, p50/p99, errors (anything but 2xx and 429) and 429s; for the
// queued runs: how many finished, failed, the wait in queue (created -> started) and the backlog drain.
//
//   WEFT_TEST_DB=postgres TEST_DATABASE_URL=postgres://postgres@127.0.0.1:5432/weft_bench \
//   REDIS_URL=redis://127.0.0.1:6379/9 node --no-node-snapshot --import tsx bench/scaled-load.ts
//
// Without REDIS_URL only the PostgreSQL-dispatch variant runs. BENCH_SECONDS (60), BENCH_WARMUP_SECONDS (5),
// BENCH_VARIANTS (`redis,postgres`). Limits are off (WEFT_LIMITS=off): this measures capacity, not plans.
// Give Redis a database index of its own (`/9` above): BullMQ's queue name is fixed, and another server on
// the same Redis database would take the bench's jobs.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import { connectDatabase } from '../src/db/connect.js';
import { bootstrappedDatabase } from '../test/support/harness.js';
import { freePort, spawnServer } from '../test/support/cli.js';
import { machine, percentile, runIfMain } from './support.js';

type Kind = 'sync' | 'async' | 'webhook' | 'tablesInsert' | 'tablesQuery' | 'aiChat';
/** Concurrent clients per kind (18 in all), each sending its next request when the last one answered. */
const CLIENTS: Record<Kind, number> = { sync: 4, async: 3, webhook: 3, tablesInsert: 2, tablesQuery: 2, aiChat: 4 };

const completion = JSON.stringify({
  id: 'chatcmpl-local', object: 'chat.completion', created: 1700000000, model: 'gpt-4o-mini',
  choices: [{ index: 0, message: { role: 'assistant', content: 'Hello! How can I help you today?', refusal: null }, logprobs: null, finish_reason: 'stop' }],
  usage: { prompt_tokens: 12, completion_tokens: 9, total_tokens: 21 },
});

/** An OpenAI-compatible chat completions upstream that answers at once (non-streaming). */
async function localUpstream(): Promise<{ base: string; close: () => Promise<void> }> {
  const server = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(completion) });
      res.end(completion);
    });
  });
  server.keepAliveTimeout = 60_000;
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    base: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`,
    close: () => new Promise<void>((r) => {
      server.closeAllConnections();
      server.close(() => r());
    }),
  };
}

interface Tally { latencies: number[]; ok: number; limited: number; errors: number; firstErrors: string[] }

async function variant(dispatch: 'redis' | 'postgres', upstreamBase: string, seconds: number, warmupSeconds: number) {
  const boot = await bootstrappedDatabase('enterprise');
  const env = {
    ...boot.env, REDIS_URL: dispatch === 'redis' ? process.env.REDIS_URL : '', WEFT_LIMITS: 'off',
    OPENAI_API_KEY: 'sk-bench', OPENAI_BASE_URL: upstreamBase, WEFT_AI_STARTING_CREDITS_USD: '1000000',
  };
  const apis = await Promise.all([0, 1].map(async () => spawnServer(env, await freePort(), 'api')));
  const workers = await Promise.all([0, 1].map(() => spawnServer(env, 0, 'worker')));
  const db = await connectDatabase({ databaseUrl: boot.where.databaseUrl, dataDir: '' });
  try {
    const key = boot.apiKey;
    const workspaceId = boot.workspaceId;
    const call = async (base: string, method: string, path: string, body?: unknown, headers: Record<string, string> = {}) => {
      const res = await fetch(base + path, {
        method, body: body === undefined ? undefined : JSON.stringify(body),
        headers: { 'x-api-key': key, ...(body !== undefined ? { 'content-type': 'application/json' } : {}), ...headers },
      });
      const text = await res.text();
      return { status: res.status, text };
    };
    const setup = async (path: string, body: unknown) => {
      const r = await call(apis[0].url, 'POST', path, body);
      if (r.status !== 200 && r.status !== 201) throw new Error(`${path}: ${r.status} ${r.text.slice(0, 300)}`);
      return JSON.parse(r.text) as { data: any };
    };
    const deploy = async (name: string, definition: unknown) => {
      const id: string = (await setup('/api/v1/workflows', { workspaceId, name, definition })).data.workflow.id;
      await setup(`/api/v1/workflows/${id}/deploy`, undefined);
      return id;
    };
    const fnBlock = (ref: string) => ({ id: 'f', type: 'function', name: 'F', config: { code: `return { i: <${ref}.i> * 2 }` } });
    const flow = await deploy('load-execute', {
      blocks: [{ id: 'start', type: 'start', name: 'Start', config: { inputFormat: [{ name: 'i', type: 'number' }] } }, fnBlock('start')],
      edges: [{ from: 'start', to: 'f' }],
    });
    await deploy('load-webhook', {
      blocks: [{ id: 'hook', type: 'webhook', name: 'Webhook', config: { path: 'load-hook', responseMode: 'ack' } }, fnBlock('webhook')],
      edges: [{ from: 'hook', to: 'f' }],
    });
    const tableId: string = (await setup('/api/v1/tables', {
      workspaceId, name: 'load',
      schema: { columns: [{ name: 'name', type: 'string' }, { name: 'city', type: 'string' }, { name: 'n', type: 'number' }] },
    })).data.table.id;
    const cities = Array.from({ length: 20 }, (_, i) => `city_${i}`);

    let n = 0;
    const send: Record<Kind, (base: string) => Promise<number>> = {
      sync: async (base) => (await call(base, 'POST', `/api/workflows/${flow}/execute`, { i: n++ })).status,
      async: async (base) => (await call(base, 'POST', `/api/workflows/${flow}/execute`, { i: n++, async: true })).status,
      webhook: async (base) => (await call(base, 'POST', '/api/webhooks/trigger/load-hook', { i: n++ }, { 'x-github-delivery': `${dispatch}-${n}` })).status,
      tablesInsert: async (base) => (await call(base, 'POST', `/api/v1/tables/${tableId}/rows`, {
        workspaceId, data: { name: `row ${n}`, city: cities[n % cities.length], n: n++ },
      })).status,
      tablesQuery: async (base) => {
        const q = new URLSearchParams({ workspaceId, filter: JSON.stringify({ city: cities[n++ % cities.length] }), limit: '20' });
        return (await call(base, 'GET', `/api/v1/tables/${tableId}/rows?${q.toString()}`)).status;
      },
      aiChat: async (base) => (await call(base, 'POST', '/api/v1/ai/chat/completions', {
        model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'Hello there, how are you?' }], max_tokens: 64,
      }, { authorization: `Bearer ${key}` })).status,
    };
    const expected: Record<Kind, number> = { sync: 200, async: 202, webhook: 200, tablesInsert: 200, tablesQuery: 200, aiChat: 200 };
    const drive = async (secondsToRun: number) => {
      const tallies = Object.fromEntries(Object.keys(CLIENTS).map((k) => [k, { latencies: [], ok: 0, limited: 0, errors: 0, firstErrors: [] }])) as unknown as Record<Kind, Tally>;
      const until = performance.now() + secondsToRun * 1000;
      let client = 0;
      await Promise.all((Object.entries(CLIENTS) as [Kind, number][]).flatMap(([kind, count]) => Array.from({ length: count }, async () => {
        const base = apis[client++ % apis.length].url; // clients spread over both API processes
        const t = tallies[kind];
        while (performance.now() < until) {
          const t0 = performance.now();
          let status: number | string;
          try {
            status = await send[kind](base);
          } catch (err) {
            status = (err as Error).message;
          }
          t.latencies.push(performance.now() - t0);
          if (status === expected[kind]) t.ok++;
          else if (status === 429) t.limited++;
          else {
            t.errors++;
            if (t.firstErrors.length < 3) t.firstErrors.push(String(status));
          }
        }
      })));
      return tallies;
    };

    await drive(warmupSeconds);
    const queuedBefore = (await db.query<{ n: number }>('SELECT count(*)::int AS n FROM executions'))[0].n;
    const measuredFrom = new Date();
    const loadAvg = os.loadavg().map((l) => +l.toFixed(2));
    const tallies = await drive(seconds);
    const loadEnded = performance.now();
    // The queued runs (async execute and webhook deliveries) of the measured window, drained.
    const pending = async () => (await db.query<{ n: number }>(
      "SELECT count(*)::int AS n FROM executions WHERE mode = 'async' AND status NOT IN ('completed', 'failed', 'cancelled') AND created_at >= $1", [measuredFrom]))[0].n;
    const backlogAtEnd = await pending();
    for (let k = 0; k < 1200 && (await pending()) > 0; k++) await new Promise((r) => setTimeout(r, 100));
    const drainMs = performance.now() - loadEnded;
    const drainedAt = Date.now();
    const runs = await db.query<{ wait_ms: number; status: string; trigger: string }>(
      "SELECT EXTRACT(EPOCH FROM (started_at - created_at)) * 1000 AS wait_ms, status, trigger FROM executions WHERE mode = 'async' AND created_at >= $1",
      [measuredFrom]);
    const waits = runs.map((r) => Number(r.wait_ms)).filter((w) => Number.isFinite(w)).sort((a, b) => a - b);

    const perKind: Record<string, unknown> = {};
    let total = 0;
    let errors = 0;
    let limited = 0;
    for (const [kind, t] of Object.entries(tallies)) {
      const sorted = t.latencies.sort((a, b) => a - b);
      total += sorted.length;
      errors += t.errors;
      limited += t.limited;
      perKind[kind] = {
        clients: CLIENTS[kind as Kind], requests: sorted.length, perSecond: Math.round(sorted.length / seconds),
        p50Ms: +percentile(sorted, 50).toFixed(1), p99Ms: +percentile(sorted, 99).toFixed(1), errors: t.errors, status429: t.limited,
        ...(t.firstErrors.length ? { firstErrors: t.firstErrors } : {}),
      };
    }
    return {
      dispatch: dispatch === 'redis' ? 'bullmq (PostgreSQL + Redis)' : 'postgres (PostgreSQL alone)',
      loadAverageAtStart: loadAvg,
      requests: total, requestsPerSecond: Math.round(total / seconds), errors, status429: limited,
      kinds: perKind,
      queuedRuns: {
        runs: runs.length, completed: runs.filter((r) => r.status === 'completed').length, failed: runs.filter((r) => r.status === 'failed').length,
        // From the window's start until the last of its runs finished.
        completedPerSecond: Math.round(runs.filter((r) => r.status === 'completed').length / ((drainedAt - measuredFrom.getTime()) / 1000)),
        queueWaitP50Ms: +percentile(waits, 50).toFixed(1), queueWaitP99Ms: +percentile(waits, 99).toFixed(1),
        backlogAtEnd, drainMs: Math.round(drainMs),
      },
      runsBeforeWindow: queuedBefore,
    };
  } finally {
    await db.close();
    await Promise.all([...apis, ...workers].map(async (s) => {
      if (s.child.exitCode !== null) return;
      const exited = new Promise((r) => s.child.once('exit', r));
      s.child.kill('SIGTERM');
      await exited;
    }));
  }
}

export async function run(): Promise<Record<string, unknown>> {
  if (!process.env.TEST_DATABASE_URL) throw new Error('scaled-load needs TEST_DATABASE_URL (a PostgreSQL server; fresh databases are created on it)');
  process.env.WEFT_TEST_DB = 'postgres';
  const seconds = Number(process.env.BENCH_SECONDS ?? 60);
  const warmup = Number(process.env.BENCH_WARMUP_SECONDS ?? 5);
  const wanted = (process.env.BENCH_VARIANTS ?? 'redis,postgres').split(',').filter((v) => v === 'postgres' || (v === 'redis' && process.env.REDIS_URL)) as ('redis' | 'postgres')[];
  const upstream = await localUpstream();
  try {
    const out: Record<string, unknown> = { machine: machine(), database: 'postgres', processes: '2 api + 2 worker', seconds, warmupSeconds: warmup, clients: CLIENTS };
    for (const v of wanted) out[v] = await variant(v, upstream.base, seconds, warmup);
    return out;
  } finally {
    await upstream.close();
  }
}

await runIfMain(import.meta.url, 'scaled-load', run);
