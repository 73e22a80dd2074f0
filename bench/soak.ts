// `npm run bench -- soak [--minutes 60] [--rate 100] [--warmup-minutes 10] [--sample-seconds 30] [--mix kind=share,...] [--idle-after-seconds 90]`: the
// memory target's second half (docs/architecture.md, Performance targets: idle RSS at most 200 MB embedded,
// flat over a one-hour soak). One embedded `weft serve`, started as `npm start` starts it (limits on, the
// default configuration), takes a steady mix of what users send for `--minutes`, at `--rate` requests a
// second sent on a fixed schedule (open loop: a slow answer does not slow the senders):
//   sync execute on the spec path (start -> function, `{inputs}`), async execute and polls of its jobs, webhook
//   deliveries (ack mode, a run queued each), table inserts and filtered queries, AI gateway chat completions
//   (an instant local upstream), knowledge search over one small document.
// Every `--sample-seconds` it reads the server's RSS (with any child processes), where that memory is
// (bench/compare-memory.ts), the main thread's V8 heap in use (/metrics), the data directory's size, and each
// kind's answers in the window. Flat means the least-squares slope of RSS over the samples after the
// warm-up stays within FLAT_MB_PER_HOUR; the same slope is given for each part of the breakdown and for the
// main heap, so growth that is data (the database's pages) can be told from growth that is a leak.
// Each sample also gives the database thread's busy share, its statements per answer and the files it synced to disk
// per answer (/metrics, over the window).
// After the load: RSS again once the server has been idle for IDLE_AFTER_SECONDS (`--idle-after-seconds`).
import { parseArgs } from 'node:util';
import { cleanupAll, diskMb, firstJsonLine, installExitHandlers, metricValue, request, sleep, start, treeRssMb } from './compare-procs.js';
import { assertBuilt, deployWorkflow, startEmbedded, type Weft } from './compare-weft.js';
import { memoryBreakdown } from './compare-memory.js';
import { machine, percentile } from './support.js';

export const standalone = true;

/** The most RSS may rise per hour after the warm-up and still count as flat. The target names no figure; 10 MB is 5 % of the 200 MB budget an hour. */
const FLAT_MB_PER_HOUR = 10;
/** Past the local embedder's idle unload (60 s, src/knowledge/local-embedder.ts), so the idle figure is what a server that once searched settles at. */
const IDLE_AFTER_SECONDS = 90;
/** Sent in flight at most; beyond it a send is counted as skipped, not queued, so a stalled server cannot make the bench pile up requests. */
const MAX_IN_FLIGHT = 200;

type Kind = 'sync' | 'async' | 'jobPoll' | 'webhook' | 'tableInsert' | 'tableQuery' | 'aiChat' | 'knowledgeSearch';
/** Shares of the rate, out of 100 (`--mix sync=60,aiChat=40` replaces it: a kind left out is not sent). */
const DEFAULT_MIX: Record<Kind, number> = { sync: 40, async: 10, jobPoll: 5, webhook: 10, tableInsert: 10, tableQuery: 8, aiChat: 15, knowledgeSearch: 2 };
const KINDS = Object.keys(DEFAULT_MIX) as Kind[];

function parseMix(text: string | undefined): Record<Kind, number> {
  if (!text) return DEFAULT_MIX;
  const mix = Object.fromEntries(KINDS.map((k) => [k, 0])) as Record<Kind, number>;
  for (const part of text.split(',')) {
    const [kind, share] = part.split('=');
    if (!KINDS.includes(kind as Kind) || !/^\d+$/.test(share ?? '')) throw new Error(`soak: --mix takes kind=share pairs, kinds ${KINDS.join(', ')}; not "${part}"`);
    mix[kind as Kind] = Number(share);
  }
  if (Object.values(mix).every((v) => v === 0)) throw new Error('soak: --mix sends nothing');
  return mix;
}

interface Window { ok: Record<Kind, number>; failed: Record<Kind, number>; syncMs: number[]; skipped: number; firstFailures: string[] }
interface Sample {
  minute: number; rssMb: number; wasmMb: number; mallocMb: number; anonymousMb: number; heapUsedMb: number; dataMb: number;
  answeredPerSecond: number; failed: number; skipped: number; syncP99Ms: number;
  /** Share of the window the database thread was busy (statements, transactions held open, VACUUM). */
  dbBusy: number;
  /** Statements the database thread ran in the window, per answer. */
  dbStatementsPerAnswer: number;
  /** Files the database synced to disk in the window (commits that waited for the disk, checkpoints), per answer. */
  dbSyncsPerAnswer: number;
}

const zero = (): Record<Kind, number> => Object.fromEntries(KINDS.map((k) => [k, 0])) as Record<Kind, number>;
const newWindow = (): Window => ({ ok: zero(), failed: zero(), syncMs: [], skipped: 0, firstFailures: [] });

/** Least-squares slope of y over x (minutes), in units per hour. */
function slopePerHour(points: { x: number; y: number }[]): number {
  const n = points.length;
  if (n < 2) return NaN;
  const mx = points.reduce((a, p) => a + p.x, 0) / n;
  const my = points.reduce((a, p) => a + p.y, 0) / n;
  const sxx = points.reduce((a, p) => a + (p.x - mx) ** 2, 0);
  const sxy = points.reduce((a, p) => a + (p.x - mx) * (p.y - my), 0);
  return sxx === 0 ? NaN : +((sxy / sxx) * 60).toFixed(2);
}

/** The embedded database thread's busy seconds, statements and file syncs since the start (/metrics). */
async function dbActivity(w: Weft): Promise<{ busySeconds: number; statements: number; syncs: number }> {
  const [busySeconds, statements, syncs] = await Promise.all(
    ['weft_db_busy_seconds_total', 'weft_db_statements_total', 'weft_db_file_syncs_total'].map((m) => metricValue(`${w.url}/metrics`, m)));
  return { busySeconds: busySeconds ?? NaN, statements: statements ?? NaN, syncs: syncs ?? NaN };
}

async function heapUsedMb(w: Weft): Promise<number> {
  const bytes = await metricValue(`${w.url}/metrics`, 'nodejs_heap_size_used_bytes');
  return bytes === undefined ? NaN : +(bytes / 1024 ** 2).toFixed(1);
}

/** The workflows, table and knowledge base the mix uses, created over the API. */
async function prepare(w: Weft): Promise<Record<Kind, () => Promise<{ ok: boolean; detail: string }>>> {
  const headers = { 'x-api-key': w.apiKey };
  const api = async (method: string, path: string, body?: unknown, extra: Record<string, string> = {}) => request(method, `${w.url}${path}`, { ...headers, ...extra }, body);
  const must = async (method: string, path: string, body: unknown, status: number) => {
    const r = await api(method, path, body);
    if (r.status !== status) throw new Error(`soak set-up: ${method} ${path}: ${r.status} ${r.text.slice(0, 300)}`);
    return r.json();
  };
  const workflowId = await deployWorkflow(w, 'soak-spec', 'spec');
  const hookPath = 'soak-hook';
  const hook = await must('POST', '/api/v1/workflows', {
    workspaceId: w.workspaceId, name: 'soak-webhook',
    definition: {
      blocks: [
        { id: 'hook', type: 'webhook', name: 'Webhook', config: { path: hookPath, responseMode: 'ack' } },
        { id: 'f', type: 'function', name: 'F', config: { code: 'return { doubled: <webhook.i> * 2 }' } },
      ],
      edges: [{ from: 'hook', to: 'f' }],
    },
  }, 201);
  await must('POST', `/api/v1/workflows/${hook.data.workflow.id as string}/deploy`, undefined, 200);
  const tableId = (await must('POST', '/api/v1/tables', {
    workspaceId: w.workspaceId, name: 'soak',
    schema: { columns: [{ name: 'name', type: 'string' }, { name: 'city', type: 'string' }, { name: 'n', type: 'number' }] },
  }, 200)).data.table.id as string;
  const baseId = (await must('POST', '/api/v1/knowledge', { workspaceId: w.workspaceId, name: 'soak' }, 200)).data.knowledgeBase.id as string;
  const doc = (await must('POST', `/api/v1/knowledge/${baseId}/documents`, {
    workspaceId: w.workspaceId, filename: 'handbook.md',
    content: '# Handbook\n\n## Refunds\nRefunds are paid within 14 days of a return.\n\n## Shipping\nParcels leave the warehouse on weekdays before noon.\n\n## Support\nThe support desk answers email within one working day.\n',
  }, 200)).data;
  const documentId = (doc.document?.id ?? doc.documents?.[0]?.id) as string;
  for (let i = 0; ; i++) {
    const r = await must('GET', `/api/v1/knowledge/${baseId}/documents/${documentId}?workspaceId=${w.workspaceId}`, undefined, 200);
    if (r.data.document.processingStatus === 'completed') break;
    if (r.data.document.processingStatus === 'failed' || i > 600) throw new Error(`soak set-up: the document did not process: ${JSON.stringify(r.data.document)}`);
    await sleep(100);
  }

  const cities = Array.from({ length: 20 }, (_, i) => `city_${i}`);
  const questions = ['how long do refunds take', 'when do parcels ship', 'how fast does support answer'];
  const jobs: string[] = [];
  let n = 0;
  const check = (r: { status: number; text: string }, status: number, ok = true) => ({ ok: r.status === status && ok, detail: `${r.status} ${r.text.slice(0, 200)}` });
  return {
    sync: async () => {
      const r = await api('POST', `/api/workflows/${workflowId}/execute`, { inputs: { n: n++ } });
      return check(r, 200, r.status === 200 && r.json().success === true);
    },
    async: async () => {
      const r = await api('POST', `/api/workflows/${workflowId}/execute`, { inputs: { n: n++ }, async: true });
      if (r.status === 202) {
        jobs.push(r.json().jobId as string);
        if (jobs.length > 1000) jobs.splice(0, jobs.length - 1000);
      }
      return check(r, 202);
    },
    jobPoll: async () => {
      const id = jobs[n++ % Math.max(1, jobs.length)];
      if (!id) return { ok: true, detail: 'no job yet' };
      return check(await api('GET', `/api/jobs/${id}`), 200);
    },
    webhook: async () => check(await request('POST', `${w.url}/api/webhooks/trigger/${hookPath}`, {}, { i: n++ }), 200),
    tableInsert: async () => check(await api('POST', `/api/v1/tables/${tableId}/rows`, { workspaceId: w.workspaceId, data: { name: `row ${n}`, city: cities[n % 20], n: n++ } }), 200),
    tableQuery: async () => {
      const q = new URLSearchParams({ workspaceId: w.workspaceId, filter: JSON.stringify({ city: cities[n++ % 20] }), sort: JSON.stringify({ n: 'desc' }), limit: '20' });
      return check(await api('GET', `/api/v1/tables/${tableId}/rows?${q.toString()}`), 200);
    },
    aiChat: async () => check(await api('POST', '/api/v1/ai/chat/completions', {
      model: 'gpt-4o-mini', messages: [{ role: 'user', content: `Hello there, question ${n++}` }], max_tokens: 64,
    }, { authorization: `Bearer ${w.apiKey}` }), 200),
    knowledgeSearch: async () => {
      const r = await api('POST', '/api/v1/knowledge/search', { workspaceId: w.workspaceId, knowledgeBaseIds: [baseId], query: questions[n++ % questions.length], topK: 3 });
      return check(r, 200, r.status === 200 && r.json().data.results.length > 0);
    },
  };
}

/** Kinds in the order sends take them: each kind `mix[kind]` times per round of the schedule, spread out rather than in runs. */
function schedule(mix: Record<Kind, number>): Kind[] {
  const order: { kind: Kind; at: number }[] = [];
  for (const [kind, share] of Object.entries(mix) as [Kind, number][]) for (let i = 0; i < share; i++) order.push({ kind, at: (i + 0.5) / share });
  return order.sort((a, b) => a.at - b.at).map((o) => o.kind);
}

export async function run(argv: string[]): Promise<Record<string, unknown>> {
  const { values } = parseArgs({
    args: argv,
    options: { minutes: { type: 'string', default: '60' }, rate: { type: 'string', default: '100' }, 'warmup-minutes': { type: 'string', default: '10' }, 'sample-seconds': { type: 'string', default: '30' }, mix: { type: 'string' }, 'idle-after-seconds': { type: 'string', default: String(IDLE_AFTER_SECONDS) } },
  });
  const minutes = Number(values.minutes);
  const rate = Number(values.rate);
  const warmupMinutes = Math.min(Number(values['warmup-minutes']), minutes / 2);
  const sampleSeconds = Number(values['sample-seconds']);
  const idleAfterSeconds = Number(values['idle-after-seconds']);
  if (!(idleAfterSeconds >= 0)) throw new Error('soak: --idle-after-seconds must be 0 or more');
  const mix = parseMix(values.mix);
  if (![minutes, rate, warmupMinutes, sampleSeconds].every((x) => Number.isFinite(x) && x > 0)) throw new Error('soak: --minutes, --rate, --warmup-minutes and --sample-seconds must be positive numbers');
  assertBuilt();
  installExitHandlers();
  const say = (s: string) => process.stderr.write(`soak ${s}\n`);
  try {
    const upstream = start('upstream', process.execPath, ['--import', 'tsx', 'bench/compare-servers.ts', 'upstream']);
    const upstreamBase = `http://127.0.0.1:${(await firstJsonLine<{ port: number }>(upstream)).port}/v1`;
    const w = await startEmbedded(upstreamBase);
    const pid = w.api().child.pid;
    const send = await prepare(w);
    const order = schedule(mix);
    const rssAtStartMb = treeRssMb(pid);
    say(`ready: RSS ${rssAtStartMb} MB; ${rate} requests/s for ${minutes} min, samples every ${sampleSeconds} s`);

    let win = newWindow();
    const totals = { ok: zero(), failed: zero(), skipped: 0 };
    const firstFailures: string[] = [];
    let sent = 0;
    const began = performance.now();
    const until = began + minutes * 60_000;
    const samples: Sample[] = [];
    let windowStart = began;
    let dbAtWindowStart = await dbActivity(w);
    let nextSample = began + sampleSeconds * 1000;
    const inFlightAll = new Set<Promise<void>>();
    /** Every answer's latency after the warm-up, by kind. */
    const steadyMs = Object.fromEntries(KINDS.map((k) => [k, [] as number[]])) as Record<Kind, number[]>;
    while (performance.now() < until) {
      // Open loop: every tick sends what the schedule owes by now, whatever the earlier sends are doing.
      const due = Math.floor(((performance.now() - began) / 1000) * rate);
      while (sent < due) {
        const kind = order[sent++ % order.length];
        if (inFlightAll.size >= MAX_IN_FLIGHT) {
          win.skipped++;
          continue;
        }
        const t0 = performance.now();
        const current = win;
        const p = send[kind]()
          .catch((err: unknown) => ({ ok: false, detail: String(err) }))
          .then((r) => {
            if (r.ok) current.ok[kind]++;
            else {
              current.failed[kind]++;
              if (current.firstFailures.length < 3) current.firstFailures.push(`${kind}: ${r.detail}`);
            }
            const ms = performance.now() - t0;
            if (kind === 'sync') current.syncMs.push(ms);
            if (t0 - began >= warmupMinutes * 60_000) steadyMs[kind].push(ms);
          })
          .finally(() => {
            inFlightAll.delete(p);
          });
        inFlightAll.add(p);
      }
      if (performance.now() >= nextSample) {
        const done = win;
        win = newWindow();
        const seconds = (performance.now() - windowStart) / 1000;
        windowStart = performance.now();
        const dbNow = await dbActivity(w);
        const dbBusy = +((dbNow.busySeconds - dbAtWindowStart.busySeconds) / seconds).toFixed(2);
        const answered = Object.values(done.ok).reduce((a, b) => a + b, 0) + Object.values(done.failed).reduce((a, b) => a + b, 0);
        const dbStatementsPerAnswer = +((dbNow.statements - dbAtWindowStart.statements) / Math.max(1, answered)).toFixed(2);
        const dbSyncsPerAnswer = +((dbNow.syncs - dbAtWindowStart.syncs) / Math.max(1, answered)).toFixed(2);
        dbAtWindowStart = dbNow;
        nextSample += sampleSeconds * 1000;
        const mem = memoryBreakdown(pid);
        const sample: Sample = {
          minute: +((performance.now() - began) / 60_000).toFixed(2),
          rssMb: treeRssMb(pid) ?? NaN,
          wasmMb: mem?.wasmMb ?? NaN, mallocMb: mem?.mallocMb ?? NaN, anonymousMb: mem?.anonymousMb ?? NaN,
          heapUsedMb: await heapUsedMb(w),
          dataMb: w.dataDir ? diskMb(w.dataDir) : NaN,
          answeredPerSecond: Math.round(answered / seconds),
          failed: Object.values(done.failed).reduce((a, b) => a + b, 0),
          skipped: done.skipped,
          syncP99Ms: Math.round(percentile(done.syncMs.sort((a, b) => a - b), 99)),
          dbBusy,
          dbStatementsPerAnswer,
          dbSyncsPerAnswer,
        };
        samples.push(sample);
        for (const k of KINDS) {
          totals.ok[k] += done.ok[k];
          totals.failed[k] += done.failed[k];
        }
        totals.skipped += done.skipped;
        for (const f of done.firstFailures) if (firstFailures.length < 10) firstFailures.push(`minute ${sample.minute}: ${f}`);
        say(`${sample.minute.toFixed(1)} min: RSS ${sample.rssMb} MB (wasm ${sample.wasmMb}, malloc ${sample.mallocMb}, anonymous ${sample.anonymousMb}), heap ${sample.heapUsedMb} MB, data ${sample.dataMb} MB, ${sample.answeredPerSecond} answered/s, sync p99 ${sample.syncP99Ms} ms, database busy ${sample.dbBusy} (${sample.dbStatementsPerAnswer} statements and ${sample.dbSyncsPerAnswer} file syncs per answer), failed ${sample.failed}, skipped ${sample.skipped}`);
      }
      await sleep(10);
    }
    await Promise.all(inFlightAll);
    for (const k of KINDS) {
      totals.ok[k] += win.ok[k];
      totals.failed[k] += win.failed[k];
    }
    totals.skipped += win.skipped;
    await sleep(idleAfterSeconds * 1000);
    const rssIdleAfterMb = treeRssMb(pid);
    const memoryIdleAfter = memoryBreakdown(pid);
    const heapIdleAfterMb = await heapUsedMb(w);
    await w.close();

    const steady = samples.filter((s) => s.minute >= warmupMinutes);
    const slope = (pick: (s: Sample) => number) => slopePerHour(steady.map((s) => ({ x: s.minute, y: pick(s) })));
    const rssSlope = slope((s) => s.rssMb);
    const atWarmup = steady[0];
    const last = samples[samples.length - 1];
    const figures = {
      machine: machine(),
      minutes, rate, warmupMinutes, sampleSeconds, mix,
      answered: Object.values(totals.ok).reduce((a, b) => a + b, 0),
      failed: totals.failed, skipped: totals.skipped, firstFailures,
      rssMb: { atStart: rssAtStartMb, afterWarmup: atWarmup?.rssMb, max: Math.max(...samples.map((s) => s.rssMb)), atEnd: last?.rssMb, idleAfter: rssIdleAfterMb },
      slopeMbPerHour: {
        rss: rssSlope, wasm: slope((s) => s.wasmMb), malloc: slope((s) => s.mallocMb), anonymous: slope((s) => s.anonymousMb),
        mainHeapUsed: slope((s) => s.heapUsedMb), data: slope((s) => s.dataMb),
      },
      memoryIdleAfter,
      heapUsedMb: { afterWarmup: atWarmup?.heapUsedMb, atEnd: last?.heapUsedMb, idleAfter: heapIdleAfterMb },
      dataMb: { afterWarmup: atWarmup?.dataMb, atEnd: last?.dataMb },
      latencyAfterWarmupMs: Object.fromEntries(KINDS.filter((k) => steadyMs[k].length).map((k) => {
        const sorted = steadyMs[k].sort((a, b) => a - b);
        return [k, { n: sorted.length, p50: +percentile(sorted, 50).toFixed(1), p99: +percentile(sorted, 99).toFixed(1), max: Math.round(sorted[sorted.length - 1]) }];
      })),
      syncP99Ms: { afterWarmup: atWarmup?.syncP99Ms, atEnd: last?.syncP99Ms, worst: Math.max(...steady.map((s) => s.syncP99Ms)) },
      dbBusyAfterWarmup: steady.length ? +(steady.reduce((a, s) => a + s.dbBusy, 0) / steady.length).toFixed(2) : NaN,
      dbStatementsPerAnswerAfterWarmup: steady.length ? +(steady.reduce((a, s) => a + s.dbStatementsPerAnswer, 0) / steady.length).toFixed(2) : NaN,
      dbSyncsPerAnswerAfterWarmup: steady.length ? +(steady.reduce((a, s) => a + s.dbSyncsPerAnswer, 0) / steady.length).toFixed(2) : NaN,
      flat: { target: `RSS slope after the warm-up <= ${FLAT_MB_PER_HOUR} MB per hour`, met: Number.isFinite(rssSlope) && rssSlope <= FLAT_MB_PER_HOUR },
      samples: samples.map((s) => [s.minute, s.rssMb, s.wasmMb, s.mallocMb, s.anonymousMb, s.heapUsedMb, s.dataMb, s.answeredPerSecond, s.syncP99Ms, s.failed, s.skipped, s.dbBusy, s.dbStatementsPerAnswer, s.dbSyncsPerAnswer]),
      sampleColumns: ['minute', 'rssMb', 'wasmMb', 'mallocMb', 'anonymousMb', 'heapUsedMb', 'dataMb', 'answeredPerSecond', 'syncP99Ms', 'failed', 'skipped', 'dbBusy', 'dbStatementsPerAnswer', 'dbSyncsPerAnswer'],
    };
    say(`RSS ${figures.rssMb.afterWarmup} MB after the warm-up, ${figures.rssMb.atEnd} at the end (max ${figures.rssMb.max}), ${figures.rssMb.idleAfter} idle after; slope ${rssSlope} MB/h: ${Number.isFinite(rssSlope) ? (figures.flat.met ? 'flat' : 'NOT flat') : 'too few samples after the warm-up to tell'}`);
    return figures;
  } finally {
    await cleanupAll();
  }
}
