// Weft as `bench/compare.ts` runs it: the built server (`dist/main.js`) in processes of its own, embedded
// (`weft serve` on a fresh data directory) or scaled (`weft api` and `weft worker` processes on a scratch
// PostgreSQL database, with Redis when given); set up, restarted and measured only through its CLI and
// its public HTTP API.
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { freePort, onCleanup, request, root, sleep, start, stop, waitFor200, type Proc } from './compare-procs.js';
import { npmStartEnv, npmStartFlags } from '../test/support/start-flags.js';

const mainJs = path.join(root, 'dist/main.js');

export interface Weft {
  variant: 'embedded' | 'postgres';
  /** The queue the async runs go through. */
  queue: 'in-process' | 'bullmq' | 'postgres';
  url: string;
  apiKey: string;
  workspaceId: string;
  /** The process serving HTTP (`weft serve` embedded, `weft api` scaled) and the worker processes (scaled only). */
  api: () => Proc;
  workers: Proc[];
  /** Milliseconds from spawning the first HTTP process to its healthy /readyz. */
  firstStartMs: number;
  /**
   * Stops the HTTP process and starts it again on the same data (with `extraEnv` added, if given); resolves
   * with the ms to a healthy /readyz.
   */
  restart: (extraEnv?: Record<string, string>) => Promise<number>;
  /** Embedded: the data directory (its size is a figure). */
  dataDir?: string;
  close: () => Promise<void>;
}

export function assertBuilt(): void {
  if (!fs.existsSync(mainJs)) {
    throw new Error('compare measures the built server: run `npm run build` first (dist/main.js is missing)');
  }
  // Measuring an old build by mistake is easy while changing src/: say so (the same test as `npm start`'s prestart).
  const stamp = path.join(root, 'dist/.build-stamp');
  const built = fs.existsSync(stamp) ? fs.statSync(stamp).mtimeMs : fs.statSync(mainJs).mtimeMs;
  const newest = (p: string): number => {
    const st = fs.statSync(p);
    return st.isDirectory() ? Math.max(st.mtimeMs, ...fs.readdirSync(p).map((e) => newest(path.join(p, e)))) : st.mtimeMs;
  };
  if (newest(path.join(root, 'src')) > built) {
    process.stderr.write('compare: WARNING: src/ changed after the last build; this measures dist/ as built (run `npm run build` to measure the changes)\n');
  }
}

// Settings the bench chooses; any other WEFT_* variable of the caller's environment passes through (and is
// reported), so a setting can be tried without editing the bench. WEFT_TEST_* belong to the test harness.
const owned = /^(WEFT_ENCRYPTION_KEY|WEFT_DATA_DIR|WEFT_LIMITS|WEFT_PLAN_LIMITS|WEFT_DEFAULT_PLAN|WEFT_AI_STARTING_CREDITS_USD|WEFT_METRICS_PORT|DATABASE_URL|REDIS_URL|PORT|HOST|OPENAI_API_KEY|OPENAI_BASE_URL)$/;

export function passedThrough(): Record<string, string> {
  return Object.fromEntries(Object.entries(process.env).filter(([k, v]) => k.startsWith('WEFT_') && !k.startsWith('WEFT_TEST_') && !owned.test(k) && v !== undefined)) as Record<string, string>;
}

/**
 * With limits on (the default configuration, what users run), plan limits too high for the bench to reach: the
 * figures include the admission's cost (usage reservation, rate bucket, concurrency slot) without its refusals.
 */
const UNREFUSING_PLAN = JSON.stringify({
  enterprise: { syncPerMinute: 100_000_000, asyncPerMinute: 100_000_000, apiPerMinute: 100_000_000, concurrentExecutions: 100_000, usageLimitUsd: 1_000_000_000 },
});

function weftEnv(upstreamBase: string, limits: boolean, extra: Record<string, string>): NodeJS.ProcessEnv {
  const env = { ...process.env };
  for (const k of Object.keys(env)) if (owned.test(k)) delete env[k];
  return {
    ...env,
    // What `npm start` sets besides its flags (glibc's malloc tuning), so that the bench measures what users run.
    ...npmStartEnv(),
    HOST: '127.0.0.1',
    // Request and run logs off by default, as in the other scenarios; LOG_LEVEL=info measures with them.
    LOG_LEVEL: process.env.LOG_LEVEL ?? 'warn',
    WEFT_LIMITS: limits ? 'on' : 'off',
    ...(limits ? { WEFT_PLAN_LIMITS: UNREFUSING_PLAN } : {}),
    WEFT_DEFAULT_PLAN: 'enterprise',
    OPENAI_API_KEY: 'sk-bench',
    OPENAI_BASE_URL: upstreamBase,
    WEFT_AI_STARTING_CREDITS_USD: '1000000',
    ...extra,
  };
}

const metricsUrls = new WeakMap<Proc, string>();

// BENCH_CPU_PROF=<dir>: every Weft process writes a V8 CPU profile of each of its threads there on exit.
const profileArgs = process.env.BENCH_CPU_PROF ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_CPU_PROF}`] : [];
// The Node flags of `npm start`, so that the bench measures what users run.
const nodeArgs = (command: string) => [...npmStartFlags(), ...profileArgs, mainJs, command];

/** `weft setup --json`: the database, the admin user, the `default` workspace and a new workspace key. */
async function setup(env: NodeJS.ProcessEnv): Promise<{ apiKey: string; workspaceId: string }> {
  const proc = start('weft setup', process.execPath, [...nodeArgs('setup'), '--json'], { env });
  let stdout = '';
  proc.child.stdout?.on('data', (d: Buffer) => (stdout += d.toString()));
  const code = await new Promise<number | null>((resolve) => proc.child.once('exit', resolve));
  let out: { apiKey?: string; workspaceId?: string } = {};
  try {
    out = JSON.parse(stdout) as typeof out;
  } catch {
    // reported below
  }
  if (code !== 0 || !out.apiKey || !out.workspaceId) throw new Error(`weft setup --json failed (${code}):\n${proc.output()}`);
  return { apiKey: out.apiKey, workspaceId: out.workspaceId };
}

async function startHttp(name: string, command: 'serve' | 'api', env: NodeJS.ProcessEnv, port: number): Promise<{ proc: Proc; ms: number }> {
  const t0 = performance.now();
  const proc = start(name, process.execPath, nodeArgs(command), { env: { ...env, PORT: String(port) } });
  const ms = await waitFor200(`http://127.0.0.1:${port}/readyz`, proc, t0);
  return { proc, ms: Math.round(ms) };
}

/** `weft serve` on a fresh embedded data directory (removed at the end). */
export async function startEmbedded(upstreamBase: string, limits = true): Promise<Weft> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'weft-compare-'));
  onCleanup(() => fs.rmSync(dir, { recursive: true, force: true }));
  const dataDir = path.join(dir, 'data');
  const env = weftEnv(upstreamBase, limits, { WEFT_DATA_DIR: dataDir });
  const { apiKey, workspaceId } = await setup(env);
  const port = await freePort();
  let server = await startHttp('weft serve', 'serve', env, port);
  return {
    variant: 'embedded', queue: 'in-process', url: `http://127.0.0.1:${port}`, apiKey, workspaceId, dataDir,
    api: () => server.proc, workers: [], firstStartMs: server.ms,
    restart: async (extraEnv = {}) => {
      await stop(server.proc);
      server = await startHttp('weft serve', 'serve', { ...env, ...extraEnv }, port);
      return server.ms;
    },
    close: () => stop(server.proc),
  };
}

/** Scaled: a scratch database on the given PostgreSQL server (dropped at the end), one `weft api`, `workers` `weft worker`s. */
export async function startScaled(upstreamBase: string, postgresUrl: string, redisUrl: string | undefined, workerCount: number, limits = true): Promise<Weft> {
  const name = `weft_compare_${Date.now().toString(36)}_${process.pid}`;
  const admin = new pg.Client({ connectionString: postgresUrl });
  await admin.connect();
  try {
    await admin.query(`CREATE DATABASE ${name}`);
  } finally {
    await admin.end();
  }
  onCleanup(async () => {
    const c = new pg.Client({ connectionString: postgresUrl });
    await c.connect();
    try {
      await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    } finally {
      await c.end();
    }
  });
  const dbUrl = new URL(postgresUrl);
  dbUrl.pathname = `/${name}`;
  // Every process of a scaled deployment holds the same secrets key (the server refuses to start without one).
  const env = weftEnv(upstreamBase, limits, {
    DATABASE_URL: dbUrl.toString(), WEFT_ENCRYPTION_KEY: randomBytes(32).toString('base64'), ...(redisUrl ? { REDIS_URL: redisUrl } : {}),
  });
  const { apiKey, workspaceId } = await setup(env);
  const port = await freePort();
  let server = await startHttp('weft api', 'api', env, port);
  // A worker serves no HTTP API; its /metrics listener (WEFT_METRICS_PORT) says it is up and counts its runs.
  const workers: Proc[] = [];
  for (let i = 0; i < workerCount; i++) {
    const metricsPort = await freePort();
    const proc = start(`weft worker ${i + 1}`, process.execPath, nodeArgs('worker'), { env: { ...env, WEFT_METRICS_PORT: String(metricsPort) } });
    metricsUrls.set(proc, `http://127.0.0.1:${metricsPort}/metrics`);
    await waitFor200(`http://127.0.0.1:${metricsPort}/metrics`, proc, performance.now());
    workers.push(proc);
  }
  return {
    variant: 'postgres', queue: redisUrl ? 'bullmq' : 'postgres', url: `http://127.0.0.1:${port}`, apiKey, workspaceId,
    api: () => server.proc, workers, firstStartMs: server.ms,
    restart: async (extraEnv = {}) => {
      await stop(server.proc);
      server = await startHttp('weft api', 'api', { ...env, ...extraEnv }, port);
      return server.ms;
    },
    close: async () => {
      await Promise.all([server.proc, ...workers].map((p) => stop(p)));
    },
  };
}

/** Async runs a worker finished so far, from its /metrics (weft_runs_total with mode="async"). */
export async function workerAsyncRuns(worker: Proc): Promise<number> {
  const url = metricsUrls.get(worker);
  if (!url) return 0;
  const r = await request('GET', url);
  let n = 0;
  for (const line of r.text.split('\n')) {
    if (line.startsWith('weft_runs_total{') && line.includes('mode="async"')) n += Number(line.slice(line.lastIndexOf(' ') + 1));
  }
  return n;
}

/** start -> function -> response: the response-block path, called with `{ "n": 21 }`. */
const responseDefinition = {
  blocks: [
    { id: 'start', type: 'start', name: 'Start', config: { inputFormat: [{ name: 'n', type: 'number', default: 1 }] } },
    { id: 'double', type: 'function', name: 'Double', config: { code: 'return { value: <start.n> * 2 }' } },
    { id: 'reply', type: 'response', name: 'Reply', config: { data: { value: '<double.value>' } } },
  ],
  edges: [{ from: 'start', to: 'double' }, { from: 'double', to: 'reply' }],
};

/**
 * start -> function, no response block: the path Sim's SDKs and the spec's examples take, called with
 * `{ "inputs": { "n": 21 } }` and answered with the spec's envelope (success, output, limits, ...).
 */
const specDefinition = {
  blocks: responseDefinition.blocks.slice(0, 2),
  edges: responseDefinition.edges.slice(0, 1),
};

/**
 * The spec path with code that needs the sandbox: a function (the callback) is outside the subset evaluated
 * without a context (docs/architecture.md, "Pure code"), so each run gets its V8 context, as every function
 * block did before. `compare` checks on /metrics that this code is not evaluated as pure code.
 */
const sandboxedDefinition = {
  blocks: [responseDefinition.blocks[0], { ...responseDefinition.blocks[1], config: { code: 'return { value: [<start.n>].map((n) => n * 2)[0] }' } }],
  edges: responseDefinition.edges.slice(0, 1),
};

/**
 * A start block alone, called like the spec path: everything a sync run costs except user code (no sandbox,
 * no fresh context). Beside the spec path it shows what the function block costs (docs/architecture.md,
 * Performance targets).
 */
const noCodeDefinition = { blocks: responseDefinition.blocks.slice(0, 1), edges: [] };

/** The sync execute paths `compare` measures: the body each is called with, and the check of its answer. */
export const syncPaths = {
  response: { definition: responseDefinition, body: { n: 21 }, ok: (a: any) => a?.value === 42 },
  spec: {
    definition: specDefinition, body: { inputs: { n: 21 } },
    ok: (a: any) => a?.success === true && a.output?.value === 42 && typeof a.limits?.usage?.currentPeriodCost === 'number',
  },
  specSandboxed: { definition: sandboxedDefinition, body: { inputs: { n: 21 } }, ok: (a: any) => a?.success === true && a.output?.value === 42 },
  noCode: {
    definition: noCodeDefinition, body: { inputs: { n: 21 } },
    ok: (a: any) => a?.success === true && a.output?.n === 21 && typeof a.limits?.usage?.currentPeriodCost === 'number',
  },
} as const;
export type SyncPath = keyof typeof syncPaths;

/** Creates and deploys a workflow of `path` over the API; checks one sync execute answers 42 in that path's shape. */
export async function deployWorkflow(w: Weft, name: string, path: SyncPath = 'response'): Promise<string> {
  const headers = { 'x-api-key': w.apiKey };
  const { definition, body, ok } = syncPaths[path];
  const created = await request('POST', `${w.url}/api/v1/workflows`, headers, { workspaceId: w.workspaceId, name, definition });
  if (created.status !== 201) throw new Error(`create workflow: ${created.status} ${created.text}`);
  const id = created.json().data.workflow.id as string;
  const deployed = await request('POST', `${w.url}/api/v1/workflows/${id}/deploy`, headers);
  if (deployed.status !== 200) throw new Error(`deploy workflow: ${deployed.status} ${deployed.text}`);
  const check = await request('POST', `${w.url}/api/workflows/${id}/execute`, headers, body);
  if (check.status !== 200 || !ok(check.json())) throw new Error(`workflow check (${path}): ${check.status} ${check.text}`);
  return id;
}

export interface AsyncFigures {
  runs: number;
  failed: number;
  enqueuePerSecond: number;
  runsPerSecond: number;
  /** The same, ended when the bench saw no queued or running run (polled every 100 ms): an upper bound on visibility. */
  observedRunsPerSecond: number;
  queueWaitP50Ms: number;
  queueWaitP99Ms: number;
  /** A run from its start to its end (endedAt - startedAt): what its writes and blocks cost it. */
  runMsP50: number;
  runMsP99: number;
  /** Scaled: the runs each worker finished in this measurement. */
  perWorker?: number[];
}

const pct = (sorted: number[], p: number) => (sorted.length ? sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] : NaN);

/**
 * `total` async runs of a freshly deployed workflow, enqueued by `clients` concurrent clients. Runs/s is
 * counted from the first enqueue to the last run's end as the server recorded it (`endedAt` of the logs;
 * same machine, same clock), so how often the bench polls does not change the figure; it polls the v2
 * runs list for a queued or running run every 100 ms (two small requests). Queue wait: startedAt - createdAt.
 */
export async function asyncRuns(w: Weft, name: string, total: number, clients: number, path: SyncPath = 'response'): Promise<AsyncFigures> {
  const id = await deployWorkflow(w, name, path);
  const headers = { 'x-api-key': w.apiKey };
  const before = await Promise.all(w.workers.map(workerAsyncRuns));
  const began = Date.now();
  let next = 0;
  await Promise.all(Array.from({ length: clients }, async () => {
    while (next < total) {
      const n = next++;
      const r = await request('POST', `${w.url}/api/workflows/${id}/execute`, headers, { n, async: true });
      if (r.status !== 202) throw new Error(`async enqueue: ${r.status} ${r.text.slice(0, 300)}`);
    }
  }));
  const enqueued = Date.now();
  const runsUrl = `${w.url}/api/v2/workflows/${id}/runs?limit=1&status=`;
  const deadline = Date.now() + 600_000;
  for (;;) {
    // Pending first, then running: a run cannot slip from one to the other unseen between the two reads.
    const pending = await request('GET', runsUrl + 'pending', headers);
    const running = await request('GET', runsUrl + 'running', headers);
    if (pending.status !== 200 || running.status !== 200) throw new Error(`runs list: ${pending.status} ${running.status} ${pending.text.slice(0, 300)}`);
    if (pending.json().data.length === 0 && running.json().data.length === 0) break;
    if (Date.now() > deadline) throw new Error('async runs did not finish within 10 minutes');
    await sleep(100);
  }
  const seenDone = Date.now();
  const rows: { mode: string; status: string; createdAt: string; startedAt: string; endedAt: string | null }[] = [];
  let cursor: string | undefined;
  do {
    const q = new URLSearchParams({ workspaceId: w.workspaceId, workflowId: id, limit: '1000', ...(cursor ? { cursor } : {}) });
    const r = await request('GET', `${w.url}/api/v1/logs?${q.toString()}`, headers);
    if (r.status !== 200) throw new Error(`logs: ${r.status} ${r.text.slice(0, 300)}`);
    const body = r.json() as { data: typeof rows; nextCursor?: string };
    rows.push(...body.data);
    cursor = body.nextCursor;
  } while (cursor);
  // The deploy check above is one sync run of this workflow; only the async ones count.
  const runs = rows.filter((r) => r.mode === 'async');
  if (runs.length !== total) throw new Error(`expected ${total} async runs in the logs, found ${runs.length}`);
  const lastEnd = Math.max(...runs.map((r) => Date.parse(r.endedAt ?? r.startedAt)));
  const waits = runs.map((r) => Date.parse(r.startedAt) - Date.parse(r.createdAt)).sort((a, b) => a - b);
  const durations = runs.map((r) => Date.parse(r.endedAt ?? r.startedAt) - Date.parse(r.startedAt)).sort((a, b) => a - b);
  const after = await Promise.all(w.workers.map(workerAsyncRuns));
  return {
    runs: total,
    failed: runs.filter((r) => r.status !== 'completed').length,
    enqueuePerSecond: Math.round(total / (Math.max(1, enqueued - began) / 1000)),
    runsPerSecond: Math.round(total / (Math.max(1, lastEnd - began) / 1000)),
    observedRunsPerSecond: Math.round(total / (Math.max(1, seenDone - began) / 1000)),
    queueWaitP50Ms: pct(waits, 50),
    queueWaitP99Ms: pct(waits, 99),
    runMsP50: pct(durations, 50),
    runMsP99: pct(durations, 99),
    ...(w.workers.length ? { perWorker: after.map((n, i) => n - before[i]) } : {}),
  };
}
