// compare: issue 17's figures side by side in one run, every party in a process of its own, the load
// generator (autocannon, 10 connections) in the bench process.
//
//   npm run build                                   # compare measures dist/, the built server
//   npm run bench -- compare                        # embedded Weft (weft serve) beside its baselines
//   npm run bench -- compare --peers                # also Portkey's open-source gateway (npm, cached in bench/.peers/)
//   npm run bench -- compare --rounds 2             # every load figure twice, each round judged
//   npm run bench -- compare --n8n-rps 10           # judge sync execute against an n8n figure measured elsewhere
//   npm run bench -- compare --growth 100000        # also: spec-path req/s before and after 100,000 more runs,
//                                                   # the data directory's size, and a retention sweep (embedded)
//   npm run bench -- compare --postgres postgres://postgres@127.0.0.1:5432/postgres --redis redis://127.0.0.1:6379/9
//                                                   # also scaled: 1 weft api + 2 weft worker on a scratch database
//
// Parties: a bare Fastify hello-world, an instant OpenAI-wire upstream and two bare pass-through proxies in front
// of it, one on Fastify and undici as the gateway is built, one on node:http alone (bench/compare-servers.ts), Weft from dist/main.js on a fresh data directory (its key from `weft setup --json`), Portkey with --peers.
// Figures: hello-world req/s; sync execute on both paths (req/s, p50, p99, ratio to hello-world; the spec path's to
// hello-world judged over paired short windows, as the gateway's to the upstream direct): the spec's
// answer (start -> function, no response block, posted `{ "inputs": {...} }` as Sim's SDKs call it, answered
// with the envelope and its `limits`) and the response-block path (start -> function -> response, posted
// `{ "n": 21 }`); the same run without user code (a start block alone, posted like the spec path: what the
// function block's sandbox call on a fresh context adds, in req/s and CPU); the upstream direct and through
// Weft's gateway (req/s, ratio) and single flight (1 connection: ms per request, the gateway's and the bare
// proxies' added ms); the bare proxies' req/s beside the gateway's (the floor of a gateway on the same
// libraries, and of any Node pass-through that parses what it forwards); the commit floor's req/s beside sync execute's (one row committed per request on the embedded
// database and nothing else: the floor of anything that records each run before answering); CPU ms per request of the serving process for each sync path, the gateway,
// the bare proxy and per async run (all threads, and the main thread alone, from /proc: it holds when the
// machine's speed varies between runs, which req/s does not), and embedded, the ms the database thread was busy
// per request (its `weft_db_busy_seconds_total`); async runs/s (2,000 runs enqueued by 20 clients,
// first enqueue to last end) and queue wait; RSS 5 s and 30 s (BENCH_SETTLED_SECONDS) after /readyz, after
// the load, and the same two after a restart, with where it is (bench/compare-memory.ts, from smaps); time
// to a healthy /readyz. With
// --growth N (embedded): the spec path's req/s after a restart, again after N more runs of history, their
// ratio; the data directory's size before and after, after a retention sweep of every run (a restart with a
// retention of 0.1 s), and after N more runs on the swept database (its space reused). A table with each target goes to stderr, one JSON line to stdout.
// Options: --runs N (async runs, 2000), --workers N (scaled, 2), --growth N (0: none), --n8n-rps X (n8n's
// webhook req/s measured on the same machine; n8n is not installed here), --limits on|off (on: the default
// configuration, with plan limits the bench cannot reach, so admission's cost is in the figures; off: as the
// figures before 2026-11-29 were taken). Environment: BENCH_SECONDS (8),
// BENCH_WARMUP_SECONDS (10), BENCH_IDLE_SECONDS (5), BENCH_SETTLED_SECONDS (30), LOG_LEVEL (warn), BENCH_CPU_PROF (a directory: CPU profiles
// of every Weft process), other WEFT_* pass through to Weft.
// The scratch database is created on the --postgres server and dropped at the end; give Redis a database
// index of its own (BullMQ's queue names are fixed). Every child process is stopped on exit, error or Ctrl-C.
import { parseArgs } from 'node:util';
import { load, machine, type LoadResult } from './support.js';
import { cleanupAll, cpuMs, descendants, diskMb, firstJsonLine, installExitHandlers, metricValue, request, rss, sleep, start, treeRssMb, treeRssSharedOnceMb, type Proc } from './compare-procs.js';
import { asyncRuns, assertBuilt, deployWorkflow, passedThrough, startEmbedded, startScaled, syncPaths, type Weft } from './compare-weft.js';
import { describeBreakdown, memoryBreakdown } from './compare-memory.js';
import { startPortkey, type Peer } from './compare-peers.js';
import { table, targetRows, type CpuPerRequest, type GrowthFigures, type RoundFigures, type Row, type VariantFigures } from './compare-report.js';

/** bench/run.ts: this scenario starts its own servers and needs no test database templates. */
export const standalone = true;

const usage = `usage: npm run bench -- compare [--peers] [--rounds N] [--runs N] [--growth N] [--n8n-rps X] [--limits on|off] [--postgres URL [--redis URL] [--workers N]]
  (after npm run build; BENCH_SECONDS, BENCH_WARMUP_SECONDS, BENCH_IDLE_SECONDS, BENCH_SETTLED_SECONDS, LOG_LEVEL; see bench/compare.ts)
`;

interface Options { peers: boolean; rounds: number; postgres?: string; redis?: string; runs: number; workers: number; growth: number; n8nRps?: number; limits: boolean }

function options(argv: string[]): Options {
  let parsed;
  try {
    parsed = parseArgs({
      args: argv,
      options: {
        peers: { type: 'boolean', default: false },
        rounds: { type: 'string', default: '1' },
        postgres: { type: 'string' },
        redis: { type: 'string' },
        runs: { type: 'string', default: process.env.BENCH_RUNS ?? '2000' },
        workers: { type: 'string', default: '2' },
        growth: { type: 'string', default: '0' },
        'n8n-rps': { type: 'string' },
        limits: { type: 'string', default: 'on' },
        help: { type: 'boolean', default: false },
      },
      strict: true,
    });
  } catch (err) {
    process.stderr.write(`compare: ${(err as Error).message}\n${usage}`);
    process.exit(2);
  }
  const { values } = parsed;
  const int = (name: string, v: string, min: number) => {
    const n = Number(v);
    if (!Number.isInteger(n) || n < min) throw new Error(`--${name} must be an integer >= ${min}`);
    return n;
  };
  if (values.help) {
    process.stderr.write(usage);
    process.exit(0);
  }
  if (values.redis && !values.postgres) throw new Error('--redis needs --postgres (Redis serves the scaled shape only)');
  if (values.limits !== 'on' && values.limits !== 'off') throw new Error('--limits must be on or off');
  return {
    peers: values.peers ?? false, rounds: int('rounds', values.rounds ?? '1', 1), postgres: values.postgres, redis: values.redis,
    runs: int('runs', values.runs ?? '2000', 1), workers: int('workers', values.workers ?? '2', 1),
    growth: int('growth', values.growth ?? '0', 0), n8nRps: n8n(values['n8n-rps']), limits: values.limits === 'on',
  };
}

function n8n(v: string | undefined): number | undefined {
  if (v === undefined) return undefined;
  const n = Number(v);
  if (!(n > 0)) throw new Error('--n8n-rps must be a positive number (req/s)');
  return n;
}

const seconds = Number(process.env.BENCH_SECONDS ?? 8);
// A server that has served for a while is what users meet: on this machine Weft's figures keep rising for about
// 20 s of load after a start (JIT, V8's background compiles, heaps reaching their size; bench/RESULTS.md, "cold and
// warm"). Each of Weft's paths is warmed this long (the baselines, which warm in a second, for 2 s), and the first
// 2 s of the first path after the start are reported apart, as the cold figure.
const warmupSeconds = Number(process.env.BENCH_WARMUP_SECONDS ?? 10);
const coldSeconds = 2;
const resumeSeconds = 3;
/**
 * The two judged ratios (the spec path to hello-world, the gateway to the upstream direct) are also read from
 * short windows taken in pairs right after the load's own window, in ABBA order (baseline, load, load, baseline,
 * ...): this host's speed drifts by half within half a minute, more than the round's first baselines, taken a
 * minute or more earlier, can stand for. The median of the pairs' ratios is judged.
 */
const pairs = 4;
const pairSeconds = 2;
const baselines = new Set(['hello', 'direct', 'proxy', 'nodeProxy', 'floor', 'peer']);
const idleSeconds = Number(process.env.BENCH_IDLE_SECONDS ?? 5);
// Idle RSS is read twice: 5 s after /readyz, and once the server has settled. V8's memory reducer collects a
// heap about 8 s after it stops allocating, so a server left idle sits at the second figure.
const settledSeconds = Math.max(idleSeconds, Number(process.env.BENCH_SETTLED_SECONDS ?? 30));
const chat = JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'Hello there, how are you?' }], max_tokens: 64 });

interface Target { url: string; method: 'GET' | 'POST'; headers?: Record<string, string>; body?: string }

/** Sync execute of a deployed workflow of `w`, posted `body` with `w`'s key, as the SDKs call it. */
const executeTarget = (w: Weft, workflowId: string, body: unknown): Target => ({
  url: `${w.url}/api/workflows/${workflowId}/execute`, method: 'POST', headers: { 'content-type': 'application/json', 'x-api-key': w.apiKey }, body: JSON.stringify(body),
});

async function helper(kind: 'hello' | 'upstream' | 'proxy' | 'node-proxy' | 'commit', ...args: string[]): Promise<Proc & { port: number }> {
  const name = { hello: 'hello-world', proxy: 'bare proxy', 'node-proxy': 'node:http proxy', upstream: 'upstream', commit: 'commit floor' }[kind];
  const proc = start(name, process.execPath, ['--import', 'tsx', 'bench/compare-servers.ts', kind, ...args]);
  const { port } = await firstJsonLine<{ port: number }>(proc);
  return Object.assign(proc, { port });
}

/**
 * Runs a load and reads the CPU time `pid` used meanwhile, per request answered: a figure that holds on a
 * machine whose speed varies from run to run, where req/s does not.
 */
async function withCpu(pid: number | undefined, load: () => Promise<LoadResult>, metricsUrl?: string): Promise<{ load: LoadResult; cpu?: CpuPerRequest }> {
  const measured = await costOf(pid, metricsUrl, load, (r) => r.requests);
  return { load: measured.value, cpu: measured.cost };
}

/**
 * What `work` cost the process `pid` per unit of `count` (requests, runs): CPU ms of its threads and of its
 * main thread, and with `metricsUrl` (an embedded server's /metrics) the ms its database thread was busy.
 */
async function costOf<T>(pid: number | undefined, metricsUrl: string | undefined, work: () => Promise<T>, count: (value: T) => number): Promise<{ value: T; cost?: CpuPerRequest }> {
  const before = cpuMs(pid);
  const busyBefore = await databaseBusySeconds(metricsUrl);
  const value = await work();
  const after = cpuMs(pid);
  const busyAfter = await databaseBusySeconds(metricsUrl);
  const n = count(value);
  if (!before || !after || n === 0) return { value };
  const per = (ms: number) => +(ms / n).toFixed(3);
  const databaseMs = busyBefore !== undefined && busyAfter !== undefined ? per((busyAfter - busyBefore) * 1000) : undefined;
  return { value, cost: { totalMs: per(after.totalMs - before.totalMs), mainMs: per(after.mainMs - before.mainMs), ...(databaseMs !== undefined ? { databaseMs } : {}) } };
}

/** `weft_db_busy_seconds_total` from a server's /metrics; undefined without a URL or the metric (PostgreSQL). */
async function databaseBusySeconds(metricsUrl: string | undefined): Promise<number | undefined> {
  return metricsUrl ? metricValue(metricsUrl, 'weft_db_busy_seconds_total') : undefined;
}

/** Fails when the sandboxed path's code is answered as pure code: that path would then measure no context. */
async function checkSandboxed(w: Weft, id: string): Promise<void> {
  if (w.variant !== 'embedded') return;
  const pureCalls = () => metricValue(`${w.url}/metrics`, 'weft_sandbox_pure_calls_total');
  const before = await pureCalls();
  const t = executeTarget(w, id, syncPaths.specSandboxed.body);
  const r = await request('POST', t.url, t.headers, syncPaths.specSandboxed.body);
  if (r.status !== 200) throw new Error(`sandboxed path: ${r.status} ${r.text.slice(0, 300)}`);
  if ((await pureCalls()) !== before) throw new Error('the sandboxed path\'s code was evaluated as pure code: choose code outside the subset');
}

type Helper = Proc & { port: number };

async function measureVariant(w: Weft, o: Options, hello: string, upstreamBase: string, proxies: { fastify: Helper; node: Helper }, floor: Helper, peer?: Peer): Promise<VariantFigures> {
  const problems: string[] = [];
  const say = (s: string) => process.stderr.write(`compare [${w.variant}] ${s}\n`);
  await sleep(idleSeconds * 1000);
  const rssIdleMb = treeRssMb(w.api().child.pid);
  const memoryIdle = memoryBreakdown(w.api().child.pid);
  if (memoryIdle) say(`idle: ${describeBreakdown(memoryIdle)}`);
  await sleep((settledSeconds - idleSeconds) * 1000);
  const rssSettledMb = treeRssMb(w.api().child.pid);
  const syncResponseId = await deployWorkflow(w, 'compare-sync-response', 'response');
  const syncSpecId = await deployWorkflow(w, 'compare-sync-spec', 'spec');
  const syncNoCodeId = await deployWorkflow(w, 'compare-sync-no-code', 'noCode');
  const syncSandboxedId = await deployWorkflow(w, 'compare-sync-sandboxed', 'specSandboxed');
  await checkSandboxed(w, syncSandboxedId);
  const execute = (id: string, body: unknown): Target => executeTarget(w, id, body);
  const targets: Record<string, Target> = {
    hello: { url: hello, method: 'GET' },
    direct: { url: `${upstreamBase}/chat/completions`, method: 'POST', headers: { 'content-type': 'application/json', authorization: 'Bearer sk-bench' }, body: chat },
    proxy: { url: `http://127.0.0.1:${proxies.fastify.port}/v1/chat/completions`, method: 'POST', headers: { 'content-type': 'application/json' }, body: chat },
    nodeProxy: { url: `http://127.0.0.1:${proxies.node.port}/v1/chat/completions`, method: 'POST', headers: { 'content-type': 'application/json' }, body: chat },
    floor: { url: `http://127.0.0.1:${floor.port}/run`, method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(syncPaths.spec.body) },
    syncSpec: execute(syncSpecId, syncPaths.spec.body),
    syncResponse: execute(syncResponseId, syncPaths.response.body),
    syncNoCode: execute(syncNoCodeId, syncPaths.noCode.body),
    syncSandboxed: execute(syncSandboxedId, syncPaths.specSandboxed.body),
    gateway: { url: `${w.url}/api/v1/ai/chat/completions`, method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${w.apiKey}` }, body: chat },
    ...(peer ? {
      peer: {
        url: `${peer.url}/v1/chat/completions`, method: 'POST' as const, body: chat,
        headers: { 'content-type': 'application/json', authorization: 'Bearer sk-bench', ...peer.headers(upstreamBase) },
      },
    } : {}),
  };
  const drive = async (label: string, t: Target, connections: number, secs: number, amount?: number) => {
    const r = await load(t.url, { connections, seconds: secs, amount, method: t.method, headers: t.headers, body: t.body });
    if (r.errors || r.non2xx) problems.push(`${label}: ${r.errors} errors, ${r.non2xx} non-2xx`);
    return r;
  };

  /** `pairs` pairs of short windows of `load` and `baseline`, in ABBA order; each pair's ratio load / baseline. */
  const pairedRatios = async (loadLabel: string, load: Target, baselineLabel: string, baseline: Target): Promise<number[]> => {
    const ratios: number[] = [];
    for (let p = 0; p < pairs; p++) {
      const order = p % 2 === 0 ? ['baseline', 'load'] : ['load', 'baseline'];
      const rps: Record<string, number> = {};
      for (const which of order) {
        const [label, t] = which === 'load' ? [loadLabel, load] : [baselineLabel, baseline];
        rps[which] = (await drive(`${label}, paired window ${p + 1}`, t, 10, pairSeconds)).rps;
      }
      ratios.push(+(rps.load / Math.max(1, rps.baseline)).toFixed(4));
    }
    return ratios;
  };

  say(`warming up (${warmupSeconds} s per path of Weft, async included, the first ${coldSeconds} s of the spec path reported as cold)`);
  const cold = await drive('warm-up (cold) sync execute, spec answer', targets.syncSpec, 10, coldSeconds);
  for (const [name, t] of Object.entries(targets)) {
    const secs = baselines.has(name) ? Math.min(2, warmupSeconds) : name === 'syncSpec' ? Math.max(0, warmupSeconds - coldSeconds) : warmupSeconds;
    if (secs > 0) await drive(`warm-up ${name}`, t, 10, secs);
  }
  // Async is warmed as long as the other paths, in batches; the first batch is reported (async's own code cold).
  const asyncWarmupEnds = Date.now() + warmupSeconds * 1000;
  const warmupAsync = await asyncRuns(w, 'compare-async-warmup', o.runs, 20);
  for (let i = 2; Date.now() < asyncWarmupEnds; i++) await asyncRuns(w, `compare-async-warmup-${i}`, o.runs, 20);

  const rounds: RoundFigures[] = [];
  for (let i = 1; i <= o.rounds; i++) {
    say(`round ${i}/${o.rounds}: 10 connections, ${seconds} s per path`);
    const helloLoad = await drive('hello-world', targets.hello, 10, seconds);
    const direct = await drive('upstream direct', targets.direct, 10, seconds);
    const bareProxy = await withCpu(proxies.fastify.child.pid, () => drive('bare proxy', targets.proxy, 10, seconds));
    const nodeProxy = await withCpu(proxies.node.child.pid, () => drive('node:http proxy', targets.nodeProxy, 10, seconds));
    const commitFloor = await withCpu(floor.child.pid, () => drive('commit floor', targets.floor, 10, seconds));
    const apiPid = w.api().child.pid;
    // The embedded server's database thread reports how busy it was (loopback: /metrics needs no token).
    const metricsUrl = w.variant === 'embedded' ? `${w.url}/metrics` : undefined;
    // Weft sat idle while the baselines ran; after an idle spell its first seconds are slower (bench/RESULTS.md,
    // "cold and warm"). The figures are for a server under steady load: it gets load again before they are taken.
    await drive('warm-up (after the baselines) sync execute, spec answer', targets.syncSpec, 10, resumeSeconds);
    const syncSpec = await withCpu(apiPid, () => drive('sync execute, spec answer', targets.syncSpec, 10, seconds), metricsUrl);
    const pairedSpec = await pairedRatios('sync execute, spec answer', targets.syncSpec, 'hello-world', targets.hello);
    const syncSandboxed = await withCpu(apiPid, () => drive('sync execute, spec answer, code in the sandbox', targets.syncSandboxed, 10, seconds), metricsUrl);
    const syncResponse = await withCpu(apiPid, () => drive('sync execute, response block', targets.syncResponse, 10, seconds), metricsUrl);
    const syncNoCode = await withCpu(apiPid, () => drive('sync execute, no user code', targets.syncNoCode, 10, seconds), metricsUrl);
    const gateway = await withCpu(apiPid, () => drive('gateway', targets.gateway, 10, seconds), metricsUrl);
    const pairedGateway = await pairedRatios('gateway', targets.gateway, 'upstream direct', targets.direct);
    const peerLoad = targets.peer ? await drive(peer!.name, targets.peer, 10, seconds) : undefined;
    say(`round ${i}/${o.rounds}: single flight, ${seconds} s per path`);
    const perRequest = async (label: string, t: Target) => +(1000 / Math.max(1, (await drive(`${label} single flight`, t, 1, seconds)).rps)).toFixed(3);
    const singleFlightMs = {
      direct: await perRequest('upstream direct', targets.direct),
      gateway: await perRequest('gateway', targets.gateway),
      proxy: await perRequest('bare proxy', targets.proxy),
      nodeProxy: await perRequest('node:http proxy', targets.nodeProxy),
      ...(targets.peer ? { peer: await perRequest(peer!.name, targets.peer) } : {}),
    };
    say(`round ${i}/${o.rounds}: ${o.runs} async runs from 20 clients`);
    const asyncMeasured = await costOf(apiPid, metricsUrl, () => asyncRuns(w, `compare-async-${i}`, o.runs, 20), (f) => f.runs);
    const asyncFigures = asyncMeasured.value;
    const asyncSandboxedMeasured = await costOf(apiPid, metricsUrl, () => asyncRuns(w, `compare-async-sandboxed-${i}`, o.runs, 20, 'specSandboxed'), (f) => f.runs);
    rounds.push({
      helloRps: helloLoad.rps, syncSpec: syncSpec.load, syncSandboxed: syncSandboxed.load, syncResponse: syncResponse.load, syncNoCode: syncNoCode.load, direct, proxy: bareProxy.load, nodeProxy: nodeProxy.load, commitFloor: commitFloor.load, gateway: gateway.load,
      pairedSpec, pairedGateway,
      ...(peerLoad ? { peer: peerLoad } : {}), singleFlightMs, async: asyncFigures, asyncSandboxed: asyncSandboxedMeasured.value,
      cpuPerRequest: {
        syncSpec: syncSpec.cpu, syncSandboxed: syncSandboxed.cpu, syncResponse: syncResponse.cpu, syncNoCode: syncNoCode.cpu, gateway: gateway.cpu, proxy: bareProxy.cpu, nodeProxy: nodeProxy.cpu,
        commitFloor: commitFloor.cpu, async: asyncMeasured.cost, asyncSandboxed: asyncSandboxedMeasured.cost,
      },
    });
  }
  const apiPid = w.api().child.pid;
  const rssAfterLoadMb = treeRssMb(apiPid);
  const rssSharedOnceAfterLoadMb = treeRssSharedOnceMb(apiPid);
  const rssPeakMb = rss(apiPid)?.peakMb;
  const memoryAfterLoad = memoryBreakdown(apiPid);
  if (memoryAfterLoad) say(`after the load: ${describeBreakdown(memoryAfterLoad)}`);
  // The tree's other processes (the sandbox process, started by the sandboxed paths): what the RSS row adds to the server's.
  const childrenAfterLoad = apiPid === undefined ? [] : descendants(apiPid).flatMap((d) => {
    const b = memoryBreakdown(d.pid);
    return b ? [{ command: d.command, ...b }] : [];
  });
  for (const c of childrenAfterLoad) say(`after the load, child ${c.command}: ${describeBreakdown(c)}`);
  const workersRssAfterLoadMb = w.workers.map((p) => treeRssMb(p.child.pid));
  say('restarting on the same data');
  const restartMs = await w.restart();
  await sleep(idleSeconds * 1000);
  const rssIdleAfterRestartMb = treeRssMb(w.api().child.pid);
  const memoryAfterRestart = memoryBreakdown(w.api().child.pid);
  if (memoryAfterRestart) say(`idle after restart: ${describeBreakdown(memoryAfterRestart)}`);
  await sleep((settledSeconds - idleSeconds) * 1000);
  const rssSettledAfterRestartMb = treeRssMb(w.api().child.pid);
  // The grown server beside a fresh one in the same sitting: the spec path on a new data directory, set up as this one was.
  const startFresh = async (): Promise<{ weft: Weft; spec: Target }> => {
    const fresh = await startEmbedded(upstreamBase, o.limits);
    const id = await deployWorkflow(fresh, 'compare-sync-spec', 'spec');
    return { weft: fresh, spec: executeTarget(fresh, id, syncPaths.spec.body) };
  };
  const growth = o.growth > 0 && w.dataDir ? await measureGrowth(w, o.growth, targets.syncSpec, drive, say, startFresh) : undefined;
  return {
    variant: w.variant, queue: w.queue,
    processes: w.workers.length ? `1 weft api + ${w.workers.length} weft worker` : '1 weft serve',
    rounds, coldSyncSpec: { seconds: coldSeconds, load: cold }, warmupAsync, rssIdleMb, rssSettledMb, idleSeconds, settledSeconds, rssAfterLoadMb, rssSharedOnceAfterLoadMb, rssPeakMb,
    ...(w.workers.length ? { workersRssAfterLoadMb } : {}),
    rssIdleAfterRestartMb, rssSettledAfterRestartMb, firstStartMs: w.firstStartMs, restartMs, problems,
    memory: { idle: memoryIdle, afterLoad: memoryAfterLoad, childrenAfterLoad, afterRestart: memoryAfterRestart },
    ...(growth ? { growth } : {}),
  };
}

type Drive = (label: string, t: Target, connections: number, secs: number, amount?: number) => Promise<LoadResult>;

/** Windows of the grown server and of a fresh one, alternated, in `measureGrowth`. */
const growthSideBySideRounds = 3;

/**
 * The growth figure (embedded): the spec path measured, `runs` more runs of it written at 10 connections,
 * measured again on the same server. Minutes of writing separate those two windows, and this machine's speed
 * drifts over minutes by more than the target's 10 % (bench/RESULTS.md), so the grown server is also measured
 * beside a fresh one started now (`startFresh`), their windows alternated: that ratio is the one judged.
 * Then the data directory's fate: a restart with a retention of 0.1 s sweeps every finished run (and
 * vacuums), and `runs` more runs on the swept database show whether its space is reused. Leaves the server
 * running with the bench's settings.
 */
async function measureGrowth(
  w: Weft, runs: number, spec: Target, drive: Drive, say: (s: string) => void, startFresh: () => Promise<{ weft: Weft; spec: Target }>,
): Promise<GrowthFigures> {
  const dir = w.dataDir!;
  // After the restart the code is cold (JIT, sandbox pool): warm it as the rounds were warmed.
  await drive('warm-up growth', spec, 10, Math.max(warmupSeconds, 2));
  const before = await drive('growth: before', spec, 10, seconds);
  const dataBefore = diskMb(dir);
  say(`growth: writing ${runs.toLocaleString('en-US')} runs of history (spec path, 10 connections)`);
  const t0 = performance.now();
  await drive('growth: history', spec, 10, 3600, runs);
  const historyRps = Math.round(runs / ((performance.now() - t0) / 1000));
  const after = await drive('growth: after', spec, 10, seconds);
  const dataAfterGrowth = diskMb(dir);
  say(`growth: ${before.rps} -> ${after.rps} req/s; data directory ${dataBefore} -> ${dataAfterGrowth} MB`);

  say(`growth: the grown server beside a fresh one, ${growthSideBySideRounds} windows each, alternated`);
  const fresh = await startFresh();
  const sideBySide: { grown: LoadResult[]; fresh: LoadResult[] } = { grown: [], fresh: [] };
  try {
    await drive('warm-up growth: fresh server', fresh.spec, 10, warmupSeconds);
    for (let i = 0; i < growthSideBySideRounds; i++) {
      // Each window follows a few seconds of the same load, as the rounds' windows do (an idle server starts slower).
      await drive('warm-up growth: grown server', spec, 10, resumeSeconds);
      sideBySide.grown.push(await drive('growth: grown server', spec, 10, seconds));
      await drive('warm-up growth: fresh server', fresh.spec, 10, resumeSeconds);
      sideBySide.fresh.push(await drive('growth: fresh server', fresh.spec, 10, seconds));
    }
  } finally {
    await fresh.weft.close();
  }
  say(`growth: grown ${sideBySide.grown.map((x) => x.rps).join(', ')} req/s against fresh ${sideBySide.fresh.map((x) => x.rps).join(', ')}; sweeping every run`);

  await w.restart({ WEFT_LOG_RETENTION_DAYS: String(0.1 / 86_400), WEFT_LOG_RETENTION_INTERVAL_SECONDS: '1' });
  const logs = `${w.url}/api/v1/logs?workspaceId=${w.workspaceId}&limit=1`;
  const deadline = Date.now() + 600_000;
  for (;;) {
    const r = await request('GET', logs, { 'x-api-key': w.apiKey });
    if (r.status !== 200) throw new Error(`logs: ${r.status} ${r.text.slice(0, 300)}`);
    if ((r.json() as { data: unknown[] }).data.length === 0) break;
    if (Date.now() > deadline) throw new Error('the retention sweep did not empty the logs in 10 minutes');
    await sleep(500);
  }
  // The sweep's VACUUM follows its last delete; let it and a checkpoint finish.
  await sleep(idleSeconds * 1000);
  const dataAfterSweep = diskMb(dir);
  await w.restart();
  say(`growth: data directory ${dataAfterSweep} MB after the sweep; writing ${runs.toLocaleString('en-US')} runs again`);
  await drive('growth: history again', spec, 10, 3600, runs);
  const dataAfterRegrowth = diskMb(dir);
  return {
    runs, before, after, historyRps, sideBySide,
    dataDirMb: { before: dataBefore, afterGrowth: dataAfterGrowth, afterSweep: dataAfterSweep, afterRegrowth: dataAfterRegrowth },
  };
}

export async function run(argv: string[] = process.argv.slice(3)): Promise<Record<string, unknown>> {
  const o = options(argv);
  assertBuilt();
  installExitHandlers();
  try {
    const hello = await helper('hello');
    const upstream = await helper('upstream');
    const upstreamBase = `http://127.0.0.1:${upstream.port}/v1`;
    const proxies = { fastify: await helper('proxy', upstreamBase), node: await helper('node-proxy', upstreamBase) };
    const floor = await helper('commit');
    const peer = o.peers ? await startPortkey() : undefined;
    const variants: VariantFigures[] = [];

    process.stderr.write('compare [embedded] starting weft serve on a fresh data directory\n');
    const embedded = await startEmbedded(upstreamBase, o.limits);
    variants.push(await measureVariant(embedded, o, `http://127.0.0.1:${hello.port}/`, upstreamBase, proxies, floor, peer));
    await embedded.close();

    if (o.postgres) {
      process.stderr.write(`compare [postgres] starting weft api + ${o.workers} weft worker on a scratch database\n`);
      const scaled = await startScaled(upstreamBase, o.postgres, o.redis, o.workers, o.limits);
      // The peer's figures do not depend on Weft's database: measured once, beside the embedded variant.
      variants.push(await measureVariant(scaled, o, `http://127.0.0.1:${hello.port}/`, upstreamBase, proxies, floor));
      await scaled.close();
    }

    const rows: Row[] = variants.flatMap((v) => targetRows(v, peer?.name, o.n8nRps));
    process.stderr.write(table(rows, {
      machine: machine(), seconds, rounds: o.rounds, logLevel: process.env.LOG_LEVEL ?? 'warn', limits: o.limits, peer: peer ? `${peer.name} ${peer.version}` : undefined,
      problems: variants.flatMap((v) => v.problems.map((p) => `${v.variant}: ${p}`)),
    }));
    return {
      machine: machine(),
      seconds, rounds: o.rounds, connections: 10, asyncRuns: o.runs, asyncClients: 20, growthRuns: o.growth, limits: o.limits ? 'on' : 'off',
      ...(o.n8nRps ? { n8nRps: o.n8nRps } : {}),
      logLevel: process.env.LOG_LEVEL ?? 'warn',
      weftEnv: passedThrough(),
      ...(peer ? { peer: { name: peer.name, version: peer.version } } : {}),
      variants,
      targets: rows.filter((r) => r.target).map((r) => ({ variant: r.variant, figure: r.figure, values: r.values, target: r.target, met: r.met })),
    };
  } finally {
    await cleanupAll();
  }
}
