// compare: issue 17's figures side by side in one run, every party in a process of its own, the load
// generator (autocannon, 10 connections) in the bench process.
//
//   npm run build                                   # compare measures dist/, the built server
//   npm run bench -- compare                        # embedded Weft (weft serve) beside its baselines
//   npm run bench -- compare --peers                # also Portkey's open-source gateway (npm, cached in bench/.peers/)
//   npm run bench -- compare --rounds 2             # every load figure twice, each round judged
//   npm run bench -- compare --postgres postgres://postgres@127.0.0.1:5432/postgres --redis redis://127.0.0.1:6379/9
//                                                   # also scaled: 1 weft api + 2 weft worker on a scratch database
//
// Parties: a bare Fastify hello-world and an instant OpenAI-wire upstream (bench/compare-servers.ts), Weft
// from dist/main.js on a fresh data directory (its key from `weft setup --json`), Portkey with --peers.
// Figures: hello-world req/s; sync execute of start -> function -> response (req/s, p50, p99, ratio to
// hello-world); the upstream direct and through Weft's gateway (req/s, ratio) and single flight (1
// connection: ms per request, the gateway's added ms); async runs/s (2,000 runs enqueued by 20 clients,
// first enqueue to last end) and queue wait; RSS after /readyz and 5 s idle, after the load and idle after
// a restart; time to a healthy /readyz. A table with each target goes to stderr, one JSON line to stdout.
// Options: --runs N (async runs, 2000), --workers N (scaled, 2). Environment: BENCH_SECONDS (8),
// BENCH_WARMUP_SECONDS (1), BENCH_IDLE_SECONDS (5), LOG_LEVEL (warn), BENCH_CPU_PROF (a directory: CPU profiles
// of every Weft process), other WEFT_* pass through to Weft.
// The scratch database is created on the --postgres server and dropped at the end; give Redis a database
// index of its own (BullMQ's queue names are fixed). Every child process is stopped on exit, error or Ctrl-C.
import fs from 'node:fs';
import { parseArgs } from 'node:util';
import { load, machine } from './support.js';
import { cleanupAll, firstJsonLine, installExitHandlers, rss, sleep, start, type Proc } from './compare-procs.js';
import { asyncRuns, assertBuilt, deployWorkflow, passedThrough, startEmbedded, startScaled, type Weft } from './compare-weft.js';
import { startPortkey, type Peer } from './compare-peers.js';
import { table, targetRows, type RoundFigures, type Row, type VariantFigures } from './compare-report.js';

/** bench/run.ts: this scenario starts its own servers and needs no test database templates. */
export const standalone = true;

const usage = `usage: npm run bench -- compare [--peers] [--rounds N] [--runs N] [--postgres URL [--redis URL] [--workers N]]
  (after npm run build; BENCH_SECONDS, BENCH_WARMUP_SECONDS, BENCH_IDLE_SECONDS, LOG_LEVEL; see bench/compare.ts)
`;

interface Options { peers: boolean; rounds: number; postgres?: string; redis?: string; runs: number; workers: number }

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
  return {
    peers: values.peers ?? false, rounds: int('rounds', values.rounds ?? '1', 1), postgres: values.postgres, redis: values.redis,
    runs: int('runs', values.runs ?? '2000', 1), workers: int('workers', values.workers ?? '2', 1),
  };
}

const seconds = Number(process.env.BENCH_SECONDS ?? 8);
const warmupSeconds = Number(process.env.BENCH_WARMUP_SECONDS ?? 1);
const idleSeconds = Number(process.env.BENCH_IDLE_SECONDS ?? 5);
const chat = JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'Hello there, how are you?' }], max_tokens: 64 });

interface Target { url: string; method: 'GET' | 'POST'; headers?: Record<string, string>; body?: string }

/** The RSS of a process and every process below it (a server may run parts of itself in child processes). */
function treeRssMb(pid: number | undefined): number | undefined {
  if (!pid) return undefined;
  const children = new Map<number, number[]>();
  for (const entry of fs.readdirSync('/proc').filter((e) => /^\d+$/.test(e))) {
    try {
      // Field 4 of /proc/<pid>/stat, after the parenthesised command name, is the parent pid.
      const stat = fs.readFileSync(`/proc/${entry}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      children.set(ppid, [...(children.get(ppid) ?? []), Number(entry)]);
    } catch {
      // gone meanwhile
    }
  }
  let total = 0;
  const stack = [pid];
  while (stack.length) {
    const p = stack.pop()!;
    total += rss(p)?.rssMb ?? 0;
    stack.push(...(children.get(p) ?? []));
  }
  return total;
}

async function helper(kind: 'hello' | 'upstream'): Promise<Proc & { port: number }> {
  const proc = start(kind === 'hello' ? 'hello-world' : 'upstream', process.execPath, ['--import', 'tsx', 'bench/compare-servers.ts', kind]);
  const { port } = await firstJsonLine<{ port: number }>(proc);
  return Object.assign(proc, { port });
}

async function measureVariant(w: Weft, o: Options, hello: string, upstreamBase: string, peer?: Peer): Promise<VariantFigures> {
  const problems: string[] = [];
  const say = (s: string) => process.stderr.write(`compare [${w.variant}] ${s}\n`);
  await sleep(idleSeconds * 1000);
  const rssIdleMb = treeRssMb(w.api().child.pid);
  const syncId = await deployWorkflow(w, 'compare-sync');
  const targets: Record<string, Target> = {
    hello: { url: hello, method: 'GET' },
    direct: { url: `${upstreamBase}/chat/completions`, method: 'POST', headers: { 'content-type': 'application/json', authorization: 'Bearer sk-bench' }, body: chat },
    sync: { url: `${w.url}/api/workflows/${syncId}/execute`, method: 'POST', headers: { 'content-type': 'application/json', 'x-api-key': w.apiKey }, body: JSON.stringify({ n: 21 }) },
    gateway: { url: `${w.url}/api/v1/ai/chat/completions`, method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${w.apiKey}` }, body: chat },
    ...(peer ? {
      peer: {
        url: `${peer.url}/v1/chat/completions`, method: 'POST' as const, body: chat,
        headers: { 'content-type': 'application/json', authorization: 'Bearer sk-bench', ...peer.headers(upstreamBase) },
      },
    } : {}),
  };
  const drive = async (label: string, t: Target, connections: number, secs: number) => {
    const r = await load(t.url, { connections, seconds: secs, method: t.method, headers: t.headers, body: t.body });
    if (r.errors || r.non2xx) problems.push(`${label}: ${r.errors} errors, ${r.non2xx} non-2xx`);
    return r;
  };

  say(`warming up (${warmupSeconds} s per path, ${Math.min(200, o.runs)} async runs)`);
  for (const [name, t] of Object.entries(targets)) await drive(`warm-up ${name}`, t, 10, warmupSeconds);
  const warmupAsync = await asyncRuns(w, 'compare-async-warmup', Math.min(200, o.runs), 20);

  const rounds: RoundFigures[] = [];
  for (let i = 1; i <= o.rounds; i++) {
    say(`round ${i}/${o.rounds}: 10 connections, ${seconds} s per path`);
    const helloLoad = await drive('hello-world', targets.hello, 10, seconds);
    const direct = await drive('upstream direct', targets.direct, 10, seconds);
    const sync = await drive('sync execute', targets.sync, 10, seconds);
    const gateway = await drive('gateway', targets.gateway, 10, seconds);
    const peerLoad = targets.peer ? await drive(peer!.name, targets.peer, 10, seconds) : undefined;
    say(`round ${i}/${o.rounds}: single flight, ${seconds} s per path`);
    const perRequest = async (label: string, t: Target) => +(1000 / Math.max(1, (await drive(`${label} single flight`, t, 1, seconds)).rps)).toFixed(3);
    const singleFlightMs = {
      direct: await perRequest('upstream direct', targets.direct),
      gateway: await perRequest('gateway', targets.gateway),
      ...(targets.peer ? { peer: await perRequest(peer!.name, targets.peer) } : {}),
    };
    say(`round ${i}/${o.rounds}: ${o.runs} async runs from 20 clients`);
    const asyncFigures = await asyncRuns(w, `compare-async-${i}`, o.runs, 20);
    rounds.push({ helloRps: helloLoad.rps, sync, direct, gateway, ...(peerLoad ? { peer: peerLoad } : {}), singleFlightMs, async: asyncFigures });
  }
  const apiPid = w.api().child.pid;
  const rssAfterLoadMb = treeRssMb(apiPid);
  const rssPeakMb = rss(apiPid)?.peakMb;
  const workersRssAfterLoadMb = w.workers.map((p) => treeRssMb(p.child.pid));
  say('restarting on the same data');
  const restartMs = await w.restart();
  await sleep(idleSeconds * 1000);
  const rssIdleAfterRestartMb = treeRssMb(w.api().child.pid);
  return {
    variant: w.variant, queue: w.queue,
    processes: w.workers.length ? `1 weft api + ${w.workers.length} weft worker` : '1 weft serve',
    rounds, warmupAsync, rssIdleMb, rssAfterLoadMb, rssPeakMb,
    ...(w.workers.length ? { workersRssAfterLoadMb } : {}),
    rssIdleAfterRestartMb, firstStartMs: w.firstStartMs, restartMs, problems,
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
    const peer = o.peers ? await startPortkey() : undefined;
    const variants: VariantFigures[] = [];

    process.stderr.write('compare [embedded] starting weft serve on a fresh data directory\n');
    const embedded = await startEmbedded(upstreamBase);
    variants.push(await measureVariant(embedded, o, `http://127.0.0.1:${hello.port}/`, upstreamBase, peer));
    await embedded.close();

    if (o.postgres) {
      process.stderr.write(`compare [postgres] starting weft api + ${o.workers} weft worker on a scratch database\n`);
      const scaled = await startScaled(upstreamBase, o.postgres, o.redis, o.workers);
      // The peer's figures do not depend on Weft's database: measured once, beside the embedded variant.
      variants.push(await measureVariant(scaled, o, `http://127.0.0.1:${hello.port}/`, upstreamBase));
      await scaled.close();
    }

    const rows: Row[] = variants.flatMap((v) => targetRows(v, peer?.name));
    process.stderr.write(table(rows, {
      machine: machine(), seconds, rounds: o.rounds, logLevel: process.env.LOG_LEVEL ?? 'warn', peer: peer ? `${peer.name} ${peer.version}` : undefined,
      problems: variants.flatMap((v) => v.problems.map((p) => `${v.variant}: ${p}`)),
    }));
    return {
      machine: machine(),
      seconds, rounds: o.rounds, connections: 10, asyncRuns: o.runs, asyncClients: 20,
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
