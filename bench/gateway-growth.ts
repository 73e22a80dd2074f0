// The AI gateway as its history grows (embedded):
//   npm run build
//   npm run bench -- gateway-growth [--history 200000] [--seconds 6]
// One `weft serve` on a fresh data directory in front of an instant OpenAI-wire upstream (bench/compare-servers.ts),
// as in `compare`: the gateway at 10 connections, then `--history` more completions written through it, then
// the gateway again. Minutes separate those two windows and this machine's speed drifts over minutes, so the
// grown server is also measured beside a fresh one started then, in three alternated windows each: their ratio
// is the figure (the gateway's counterpart of compare's growth figure for runs). Each request leaves its
// request row, two ledger entries and a usage event, keyed by its completion id (docs/architecture.md, "Run ids");
// the data directory's growth per request is reported too. Other WEFT_* variables pass through to Weft.
import { parseArgs } from 'node:util';
import { cleanupAll, diskMb, firstJsonLine, installExitHandlers, start } from './compare-procs.js';
import { assertBuilt, startEmbedded, type Weft } from './compare-weft.js';
import { load, median, type LoadResult } from './support.js';

/** bench/run.ts: this scenario starts its own servers and needs no test database templates. */
export const standalone = true;

const CONNECTIONS = 10;
const ROUNDS = 3;
const chat = JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'Hello there, how are you?' }], max_tokens: 64 });

/** The gateway of `w` at 10 connections for `seconds` (or `amount` requests); any failed request fails the bench. */
async function drive(w: Weft, seconds: number, amount?: number): Promise<LoadResult> {
  const r = await load(`${w.url}/api/v1/ai/chat/completions`, {
    connections: CONNECTIONS, seconds, amount, method: 'POST', body: chat,
    headers: { 'content-type': 'application/json', authorization: `Bearer ${w.apiKey}` },
  });
  if (r.errors || r.non2xx) throw new Error(`gateway: ${r.errors} errors, ${r.non2xx} non-2xx of ${r.requests}`);
  return r;
}

export async function run(argv: string[] = process.argv.slice(3)): Promise<Record<string, unknown>> {
  const { values } = parseArgs({ args: argv, options: { history: { type: 'string', default: '200000' }, seconds: { type: 'string', default: '6' } }, strict: true });
  const history = Number(values.history);
  const seconds = Number(values.seconds);
  if (!Number.isInteger(history) || history < 1 || !(seconds > 0)) throw new Error('--history must be an integer >= 1 and --seconds > 0');
  assertBuilt();
  installExitHandlers();
  const say = (s: string) => console.error(`[gateway-growth] ${s}`);
  try {
    const upstream = start('upstream', process.execPath, ['--import', 'tsx', 'bench/compare-servers.ts', 'upstream']);
    const { port } = await firstJsonLine<{ port: number }>(upstream);
    const upstreamBase = `http://127.0.0.1:${port}/v1`;
    const grown = await startEmbedded(upstreamBase);
    await drive(grown, 3);
    const before = await drive(grown, seconds);
    const dataBeforeMb = diskMb(grown.dataDir!);
    say(`${before.rps} req/s; writing ${history.toLocaleString('en-US')} completions of history`);
    const t0 = performance.now();
    await drive(grown, 3600, history);
    const historyRps = Math.round(history / ((performance.now() - t0) / 1000));
    const after = await drive(grown, seconds);
    const dataAfterMb = diskMb(grown.dataDir!);
    say(`${before.rps} -> ${after.rps} req/s; data directory ${dataBeforeMb} -> ${dataAfterMb} MB; the grown server beside a fresh one`);
    const fresh = await startEmbedded(upstreamBase);
    const windows: { grown: number[]; fresh: number[] } = { grown: [], fresh: [] };
    try {
      await drive(fresh, 3);
      for (let i = 0; i < ROUNDS; i++) {
        // Each window follows a few seconds of the same load (an idle server starts slower).
        await drive(grown, 2);
        windows.grown.push((await drive(grown, seconds)).rps);
        await drive(fresh, 2);
        windows.fresh.push((await drive(fresh, seconds)).rps);
      }
    } finally {
      await fresh.close();
    }
    say(`grown ${windows.grown.join(', ')} req/s against fresh ${windows.fresh.join(', ')}`);
    return {
      history, connections: CONNECTIONS, seconds,
      before: { rps: before.rps, p99: before.p99 }, after: { rps: after.rps, p99: after.p99 }, historyRps,
      dataBeforeMb, dataAfterMb, kbPerRequest: Math.round(((dataAfterMb - dataBeforeMb) * 1024 * 10) / history) / 10,
      sideBySide: windows, grownToFresh: Math.round((median(windows.grown) / median(windows.fresh)) * 100) / 100,
    };
  } finally {
    await cleanupAll();
  }
}
