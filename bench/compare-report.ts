// The figures of `bench/compare.ts` as rows, each with issue 17's target where the issue states one,
// and the readable table printed on stderr.
import { median, type LoadResult } from './support.js';
import type { AsyncFigures, Weft } from './compare-weft.js';
import type { MemoryBreakdown } from './compare-memory.js';

export interface RoundFigures {
  helloRps: number;
  /** Sync execute of start -> function -> response, posted `{ "n": 21 }`: the response-block path. */
  syncResponse: LoadResult;
  /** Sync execute of start -> function, posted `{ "inputs": { "n": 21 } }`: the spec's answer, as Sim's SDKs call it. */
  syncSpec: LoadResult;
  /**
   * The spec path with code that needs the sandbox (a call), so each run gets a V8 context; the spec path's own
   * code is evaluated without one (docs/architecture.md, "Pure code"). Absent in figures recorded before it.
   */
  syncSandboxed?: LoadResult;
  /**
   * Sync execute of a start block alone, posted like the spec path: a run without user code (no sandbox).
   * Absent in figures recorded before it.
   */
  syncNoCode?: LoadResult;
  direct: LoadResult;
  /** The bare pass-through proxy in front of the same upstream (bench/compare-servers.ts). */
  proxy: LoadResult;
  /** The same on node:http alone, no library (older reports lack it). */
  nodeProxy?: LoadResult;
  /**
   * The commit floor (bench/compare-servers.ts): POST with the spec path's body, one row committed on the
   * embedded database per request before the answer, nothing else. Absent in figures recorded before it.
   */
  commitFloor?: LoadResult;
  gateway: LoadResult;
  /**
   * The spec path's req/s over hello-world's, and the gateway's over the upstream direct's, in pairs of short
   * windows taken in ABBA order after the load's own window (bench/compare.ts): the judged ratios are their
   * medians. Absent in figures recorded before 2026-12-01, judged against the round's first baselines.
   */
  pairedSpec?: number[];
  pairedGateway?: number[];
  peer?: LoadResult;
  /** One connection: ms per request (1000 / req/s), the client's own time included alike on every path. */
  singleFlightMs: { direct: number; gateway: number; /** The bare proxy: what passing a request through costs with nothing else done. */ proxy?: number; nodeProxy?: number; peer?: number };
  async: AsyncFigures;
  /** Async runs of the spec path's workflow with code that needs the sandbox. Absent in figures recorded before it. */
  asyncSandboxed?: AsyncFigures;
  /** CPU time per request of the process serving each path (Weft's API process; the proxy's own process). */
  cpuPerRequest: {
    syncSpec?: CpuPerRequest; syncSandboxed?: CpuPerRequest; syncResponse?: CpuPerRequest; syncNoCode?: CpuPerRequest; gateway?: CpuPerRequest;
    proxy?: CpuPerRequest; nodeProxy?: CpuPerRequest; commitFloor?: CpuPerRequest; async?: CpuPerRequest; asyncSandboxed?: CpuPerRequest;
  };
}

/**
 * CPU ms per request answered during a load (per run for async): the serving process's threads together, and
 * its main thread; with the embedded database, the ms its thread was busy (`weft_db_busy_seconds_total`).
 */
export interface CpuPerRequest { totalMs: number; mainMs: number; databaseMs?: number }

export interface VariantFigures {
  variant: Weft['variant'];
  queue: Weft['queue'];
  processes: string;
  rounds: RoundFigures[];
  /** The spec path's first seconds of load after the start (before the warm-up): a cold server. */
  coldSyncSpec: { seconds: number; load: LoadResult };
  /** The async warm-up: the first batch of runs after the sync loads (async's own code still cold). */
  warmupAsync: AsyncFigures;
  /** RSS 5 s (BENCH_IDLE_SECONDS) after /readyz. */
  rssIdleMb?: number;
  /** RSS `settledSeconds` after /readyz, once V8's memory reducer has run on the idle heaps. */
  rssSettledMb?: number;
  idleSeconds: number;
  settledSeconds: number;
  rssAfterLoadMb?: number;
  /** The same tree with the pages its children share with the server (node and its libraries, mapped again) counted once. */
  rssSharedOnceAfterLoadMb?: number;
  rssPeakMb?: number;
  workersRssAfterLoadMb?: (number | undefined)[];
  rssIdleAfterRestartMb?: number;
  rssSettledAfterRestartMb?: number;
  firstStartMs: number;
  restartMs: number;
  /**
   * Where the serving process's RSS is (bench/compare-memory.ts): idle after start, after the load, idle after a
   * restart; and after the load, each process below it (the sandbox process), which the RSS rows count too.
   */
  memory: { idle?: MemoryBreakdown; afterLoad?: MemoryBreakdown; childrenAfterLoad?: (MemoryBreakdown & { command: string })[]; afterRestart?: MemoryBreakdown };
  growth?: GrowthFigures;
  /** Load measurements that saw transport errors or non-2xx answers: their figures are not valid. */
  problems: string[];
}

/** The spec path on the same server before and after `runs` more runs of history, and the data directory meanwhile. */
export interface GrowthFigures {
  runs: number;
  before: LoadResult;
  after: LoadResult;
  /** How fast the history itself went in (10 connections, spec path). */
  historyRps: number;
  /** The grown server and a fresh one measured in alternated windows after the history went in. */
  sideBySide: { grown: LoadResult[]; fresh: LoadResult[] };
  dataDirMb: { before: number; afterGrowth: number; afterSweep?: number; afterRegrowth?: number };
}

export interface Row {
  variant: string;
  figure: string;
  /** One value per round (or a single value for once-per-run figures such as RSS and start-up). */
  values: number[];
  target?: string;
  /** Met when every value passes and no load measurement of the variant saw errors; undefined without a target. */
  met?: boolean;
}

type Pass = (v: number) => boolean;

export function targetRows(v: VariantFigures, peerName = 'peer', n8nRps?: number): Row[] {
  const rows: Row[] = [];
  const embedded = v.variant === 'embedded';
  // Errors while warming up are listed but do not void the measured figures.
  const clean = v.problems.every((p) => p.startsWith('warm-up'));
  const add = (figure: string, values: (number | undefined)[], target?: string, pass?: Pass) => {
    const xs = values.filter((x): x is number => x !== undefined && Number.isFinite(x));
    if (xs.length === 0) return;
    rows.push({
      variant: v.variant, figure, values: xs,
      ...(target && pass ? { target, met: clean && xs.length === values.length && xs.every(pass) } : {}),
    });
  };
  const r = v.rounds;
  const ratio = (a: number, b: number) => +(a / Math.max(1, b)).toFixed(4);
  // Windows of equal length: their req/s summed weigh each window alike.
  const sum = (loads: LoadResult[]) => loads.reduce((total, x) => total + x.rps, 0);
  add('hello-world req/s', r.map((x) => x.helloRps));
  const pairedOr = (paired: number[] | undefined, fallback: number) => (paired?.length ? +median(paired).toFixed(4) : fallback);
  // The issue's targets are set on the spec's answer path; the response-block path is shown beside it.
  // The spec path's code is pure, so it runs without a context; the same path with code that needs the sandbox
  // is judged beside it, so that what a function block's context costs stays in view.
  const paths = [
    ['spec answer {inputs}', 'syncSpec', true], ['spec answer {inputs}, code in the sandbox', 'syncSandboxed', true], ['response block {n}', 'syncResponse', false],
  ] as const;
  for (const [label, key, judged] of paths) {
    if (!r.some((x) => x[key])) continue;
    const target = embedded && judged;
    add(`sync execute req/s, ${label}`, r.map((x) => x[key]?.rps));
    add(`sync execute p50 ms, ${label}`, r.map((x) => x[key]?.p50));
    add(`sync execute p99 ms, ${label}`, r.map((x) => x[key]?.p99), target ? '< 20' : undefined, (x) => x < 20);
    // The spec path's ratio from its paired windows (their median) where the round has them.
    const paired = (x: RoundFigures) => (key === 'syncSpec' ? x.pairedSpec : undefined);
    add(`sync execute / hello-world, ${label}${r.some(paired) ? ', median of paired windows' : ''}`,
      r.map((x) => { const l = x[key]; return l ? pairedOr(paired(x), ratio(l.rps, x.helloRps)) : undefined; }), target ? '>= 1/15 (0.0667)' : undefined, (x) => x >= 1 / 15);
    if (r.some(paired)) {
      add(`sync execute / hello-world, ${label}, each paired window`, r.flatMap((x) => paired(x) ?? []));
      add(`sync execute / the round's first hello-world, ${label}`, r.map((x) => { const l = x[key]; return l ? ratio(l.rps, x.helloRps) : undefined; }));
    }
    if (n8nRps) {
      add(`sync execute / n8n (${n8nRps} req/s recorded), ${label}`, r.map((x) => { const l = x[key]; return l ? +(l.rps / n8nRps).toFixed(1) : undefined; }), target ? '>= 100' : undefined, (x) => x >= 100);
    }
  }
  // The same run without user code: what the function block (its sandbox call, on a fresh context) adds.
  if (r.some((x) => x.syncNoCode)) {
    add('sync execute req/s, no user code {inputs} (start block alone)', r.map((x) => x.syncNoCode?.rps));
    add('sync execute p99 ms, no user code {inputs}', r.map((x) => x.syncNoCode?.p99));
    add('sync execute / hello-world, no user code {inputs}', r.map((x) => (x.syncNoCode ? ratio(x.syncNoCode.rps, x.helloRps) : undefined)));
  }
  // What recording each run costs at the least on the embedded database, beside hello-world and the spec path.
  if (r.some((x) => x.commitFloor)) {
    add('commit floor req/s (one row committed per request, embedded database, nothing else)', r.map((x) => x.commitFloor?.rps));
    add('commit floor / hello-world', r.map((x) => (x.commitFloor ? ratio(x.commitFloor.rps, x.helloRps) : undefined)));
    add('sync execute / commit floor, spec answer', r.map((x) => (x.commitFloor ? ratio(x.syncSpec.rps, x.commitFloor.rps) : undefined)));
  }
  // Cold: the first seconds after the start, before the warm-up (shown, not judged: the targets are for a server
  // that has been serving).
  const cold = v.coldSyncSpec;
  add(`cold: sync execute req/s, spec answer, first ${cold.seconds} s after the start`, [cold.load.rps]);
  add(`cold: sync execute p99 ms, spec answer, first ${cold.seconds} s after the start`, [cold.load.p99]);
  if (v.growth) {
    const g = v.growth;
    const runs = g.runs.toLocaleString('en-US');
    add('growth: sync execute req/s, spec answer, before', [g.before.rps]);
    add(`growth: sync execute req/s, spec answer, after ${runs} more runs`, [g.after.rps]);
    add('growth: p99 ms before / after', [g.before.p99, g.after.p99]);
    add('growth: ratio after / before (minutes apart)', [ratio(g.after.rps, g.before.rps)]);
    add(`growth, same sitting: sync execute req/s, spec answer, server with ${runs} more runs`, g.sideBySide.grown.map((x) => x.rps));
    add('growth, same sitting: sync execute req/s, spec answer, fresh server', g.sideBySide.fresh.map((x) => x.rps));
    add('growth, same sitting: p99 ms, grown server', g.sideBySide.grown.map((x) => x.p99));
    add('growth, same sitting: p99 ms, fresh server', g.sideBySide.fresh.map((x) => x.p99));
    add('growth, same sitting: ratio grown / fresh (sums of the windows)', [ratio(sum(g.sideBySide.grown), sum(g.sideBySide.fresh))], embedded ? '>= 0.9' : undefined, (x) => x >= 0.9);
    add('growth: history written at req/s', [g.historyRps]);
    add('data directory MB, before the growth', [g.dataDirMb.before]);
    add(`data directory MB, after ${runs} more runs`, [g.dataDirMb.afterGrowth]);
    add('data directory MB, after a retention sweep of every run', [g.dataDirMb.afterSweep]);
    add(`data directory MB, after ${runs} runs more on the swept database`, [g.dataDirMb.afterRegrowth]);
  }
  add('upstream direct req/s', r.map((x) => x.direct.rps));
  add('gateway req/s', r.map((x) => x.gateway.rps));
  add('gateway p99 ms', r.map((x) => x.gateway.p99));
  const pairedGateway = r.some((x) => x.pairedGateway?.length);
  add(`gateway / direct${pairedGateway ? ', median of paired windows' : ''}`, r.map((x) => pairedOr(x.pairedGateway, ratio(x.gateway.rps, x.direct.rps))),
    embedded ? '>= 0.20' : undefined, (x) => x >= 0.2);
  if (pairedGateway) {
    add('gateway / direct, each paired window', r.flatMap((x) => x.pairedGateway ?? []));
    add("gateway / the round's first direct", r.map((x) => ratio(x.gateway.rps, x.direct.rps)));
  }
  add('bare proxy req/s (Fastify + undici pass-through)', r.map((x) => x.proxy.rps));
  add('bare proxy / direct', r.map((x) => ratio(x.proxy.rps, x.direct.rps)));
  add('gateway / bare proxy', r.map((x) => ratio(x.gateway.rps, x.proxy.rps)));
  if (r.some((x) => x.nodeProxy)) {
    add('node:http proxy req/s (no library, parses what it forwards)', r.map((x) => x.nodeProxy?.rps));
    add('node:http proxy / direct', r.map((x) => (x.nodeProxy ? ratio(x.nodeProxy.rps, x.direct.rps) : undefined)));
  }
  const cpu = (label: string, pick: (x: RoundFigures) => CpuPerRequest | undefined, per = 'request') => {
    add(`CPU ms per ${per}, ${label}: all threads`, r.map((x) => pick(x)?.totalMs));
    add(`CPU ms per ${per}, ${label}: main thread`, r.map((x) => pick(x)?.mainMs));
    add(`database thread busy ms per ${per}, ${label}`, r.map((x) => pick(x)?.databaseMs));
  };
  cpu(`sync execute, spec answer (${v.variant === 'embedded' ? 'weft serve' : 'weft api'})`, (x) => x.cpuPerRequest.syncSpec);
  if (r.some((x) => x.cpuPerRequest.syncSandboxed)) cpu('sync execute, spec answer, code in the sandbox', (x) => x.cpuPerRequest.syncSandboxed);
  cpu('sync execute, response block', (x) => x.cpuPerRequest.syncResponse);
  if (r.some((x) => x.cpuPerRequest.syncNoCode)) {
    cpu('sync execute, no user code', (x) => x.cpuPerRequest.syncNoCode);
    add('CPU ms per request the function block adds (spec answer - no user code): all threads', r.map((x) => {
      const spec = x.cpuPerRequest.syncSpec?.totalMs;
      const bare = x.cpuPerRequest.syncNoCode?.totalMs;
      return spec === undefined || bare === undefined ? undefined : +(spec - bare).toFixed(3);
    }));
  }
  cpu('gateway', (x) => x.cpuPerRequest.gateway);
  cpu('bare proxy', (x) => x.cpuPerRequest.proxy);
  if (r.some((x) => x.cpuPerRequest.nodeProxy)) cpu('node:http proxy', (x) => x.cpuPerRequest.nodeProxy);
  if (r.some((x) => x.cpuPerRequest.commitFloor)) cpu('commit floor', (x) => x.cpuPerRequest.commitFloor);
  cpu(`async (${v.variant === 'embedded' ? 'weft serve' : 'weft api'}; the bench's polling included)`, (x) => x.cpuPerRequest.async, 'run');
  if (r.some((x) => x.cpuPerRequest.asyncSandboxed)) cpu('async, code in the sandbox', (x) => x.cpuPerRequest.asyncSandboxed, 'run');
  // Busy ms per request times requests per second: near 1, the database thread is what bounds the path.
  const share = (label: string, perSecond: (x: RoundFigures) => number, pick: (x: RoundFigures) => CpuPerRequest | undefined) =>
    add(`database thread busy, share of the time, ${label}`, r.map((x) => {
      const ms = pick(x)?.databaseMs;
      return ms === undefined ? undefined : +((ms * perSecond(x)) / 1000).toFixed(2);
    }));
  share('sync execute, spec answer', (x) => x.syncSpec.rps, (x) => x.cpuPerRequest.syncSpec);
  share('gateway', (x) => x.gateway.rps, (x) => x.cpuPerRequest.gateway);
  share('async', (x) => x.async.runsPerSecond, (x) => x.cpuPerRequest.async);
  add('single flight direct ms/req', r.map((x) => x.singleFlightMs.direct));
  add('single flight gateway ms/req', r.map((x) => x.singleFlightMs.gateway));
  add('single flight gateway added ms', r.map((x) => +(x.singleFlightMs.gateway - x.singleFlightMs.direct).toFixed(3)),
    embedded ? '<= 0.5' : undefined, (x) => x <= 0.5);
  add('single flight bare proxy added ms', r.map((x) => (x.singleFlightMs.proxy === undefined ? undefined : +(x.singleFlightMs.proxy - x.singleFlightMs.direct).toFixed(3))));
  add('single flight node:http proxy added ms', r.map((x) => (x.singleFlightMs.nodeProxy === undefined ? undefined : +(x.singleFlightMs.nodeProxy - x.singleFlightMs.direct).toFixed(3))));
  if (r.some((x) => x.peer)) {
    add(`${peerName} req/s`, r.map((x) => x.peer?.rps));
    add(`${peerName} / direct`, r.map((x) => (x.peer ? ratio(x.peer.rps, x.direct.rps) : undefined)));
    add(`single flight ${peerName} added ms`, r.map((x) => (x.singleFlightMs.peer === undefined ? undefined : +(x.singleFlightMs.peer - x.singleFlightMs.direct).toFixed(3))));
    add(`gateway / ${peerName} req/s`, r.map((x) => (x.peer ? +(x.gateway.rps / Math.max(1, x.peer.rps)).toFixed(2) : undefined)), '>= 5', (x) => x >= 5);
  }
  const asyncTarget = embedded ? 1000 : v.queue === 'bullmq' ? 3000 : undefined;
  add('async runs/s (enqueue to last end)', r.map((x) => x.async.runsPerSecond), asyncTarget ? `>= ${asyncTarget}` : undefined, (x) => x >= (asyncTarget ?? 0));
  add('async runs/s, the warm-up batch (async code cold)', [v.warmupAsync.runsPerSecond]);
  add('async enqueue/s', r.map((x) => x.async.enqueuePerSecond));
  add('async runs failed', r.map((x) => x.async.failed), '0', (x) => x === 0);
  add('async queue wait p50 ms', r.map((x) => x.async.queueWaitP50Ms), '<= 5', (x) => x <= 5);
  add('async queue wait p99 ms', r.map((x) => x.async.queueWaitP99Ms));
  add('async run p50 ms (start to end)', r.map((x) => x.async.runMsP50));
  add('async run p99 ms (start to end)', r.map((x) => x.async.runMsP99));
  if (r.some((x) => x.asyncSandboxed)) {
    add('async runs/s, code in the sandbox', r.map((x) => x.asyncSandboxed?.runsPerSecond), asyncTarget ? `>= ${asyncTarget}` : undefined, (x) => x >= (asyncTarget ?? 0));
    add('async runs failed, code in the sandbox', r.map((x) => x.asyncSandboxed?.failed), '0', (x) => x === 0);
    add('async queue wait p50 ms, code in the sandbox', r.map((x) => x.asyncSandboxed?.queueWaitP50Ms), '<= 5', (x) => x <= 5);
  }
  r.forEach((x, i) => {
    if (x.async.perWorker) add(`async runs per worker, round ${i + 1}`, x.async.perWorker);
  });
  const api = embedded ? 'weft serve' : 'weft api';
  add(`RSS MB, ${api}, idle ${v.idleSeconds} s after start`, [v.rssIdleMb], embedded ? '<= 200' : undefined, (x) => x <= 200);
  add(`RSS MB, ${api}, idle ${v.settledSeconds} s after start`, [v.rssSettledMb], embedded ? '<= 200' : undefined, (x) => x <= 200);
  add(`RSS MB, ${api}, after the load`, [v.rssAfterLoadMb], embedded ? '<= 300' : undefined, (x) => x <= 300);
  if (v.rssSharedOnceAfterLoadMb !== undefined) {
    add(`RSS MB, ${api}, after the load, pages its children share with it counted once`, [v.rssSharedOnceAfterLoadMb]);
  }
  add(`RSS MB, ${api}, peak`, [v.rssPeakMb]);
  if (v.workersRssAfterLoadMb) add('RSS MB, workers, after the load', v.workersRssAfterLoadMb);
  add(`RSS MB, ${api}, idle ${v.idleSeconds} s after restart`, [v.rssIdleAfterRestartMb], embedded ? '<= 200' : undefined, (x) => x <= 200);
  add(`RSS MB, ${api}, idle ${v.settledSeconds} s after restart`, [v.rssSettledAfterRestartMb], embedded ? '<= 200' : undefined, (x) => x <= 200);
  for (const [when, b] of [['idle after start', v.memory.idle], ['after the load', v.memory.afterLoad], ['idle after restart', v.memory.afterRestart]] as const) {
    if (!b) continue;
    add(`smaps MB, ${api}, ${when}: wasm / malloc / code / files / anonymous`, [b.wasmMb, b.mallocMb, b.codeMb, b.filesMb, b.anonymousMb]);
  }
  for (const c of v.memory.childrenAfterLoad ?? []) {
    add(`smaps MB, its child ${c.command}, after the load: rss / malloc / code / files / anonymous`, [c.rssMb, c.mallocMb, c.codeMb, c.filesMb, c.anonymousMb]);
  }
  add(`start to /readyz ms, first start`, [v.firstStartMs]);
  add(`start to /readyz ms, restart`, [v.restartMs], embedded ? '< 3000' : undefined, (x) => x < 3000);
  return rows;
}

const fmt = (x: number) => (Number.isInteger(x) ? x.toLocaleString('en-US') : Math.abs(x) >= 100 ? Math.round(x).toLocaleString('en-US') : String(+x.toPrecision(3)));

export function table(rows: Row[], meta: { machine: string; seconds: number; rounds: number; logLevel: string; limits: boolean; peer?: string; problems: string[] }): string {
  const cells = rows.map((r) => [r.variant, r.figure, r.values.map(fmt).join(' / '), r.target ?? '', r.met === undefined ? '' : r.met ? 'met' : 'NOT MET']);
  const head = ['variant', 'figure', meta.rounds > 1 ? 'rounds' : 'value', 'target', ''];
  const widths = head.map((h, i) => Math.max(h.length, ...cells.map((c) => c[i].length)));
  const line = (c: string[]) => c.map((s, i) => (i === 2 ? s.padStart(widths[i]) : s.padEnd(widths[i]))).join('  ').trimEnd();
  const out = [
    '',
    `compare: ${meta.machine}; 10 connections, ${meta.seconds} s per path, ${meta.rounds} round(s), Weft LOG_LEVEL ${meta.logLevel}, limits ${meta.limits ? 'on (plan limits out of reach)' : 'off'}${meta.peer ? `; peer ${meta.peer}` : ''}`,
    line(head),
    line(widths.map((w) => '-'.repeat(w))),
    ...cells.map(line),
    ...(meta.problems.length ? ['', 'Errors under load (the targets of that variant are judged not met):', ...meta.problems.map((p) => `  ${p}`)] : []),
  ];
  return out.join('\n') + '\n';
}
