// Async throughput of the embedded server as its data grows:
//   npm run build
//   npm run bench -- async-growth [--prior 40000] [--runs 2000]
// One `weft serve` on a fresh data directory and an instant OpenAI-wire upstream (bench/compare-servers.ts),
// as in `compare`. First `--prior` async runs are pushed through (20 clients) so that the run tables hold that
// many rows; then `--runs` more are measured the same way as compare's async figure. The embedded database
// has no autovacuum of its own, so this is the figure that shows whether its tables stay fast as they grow
// (src/db/pglite-vacuum.ts). Other WEFT_* variables pass through to Weft.
import { parseArgs } from 'node:util';
import { cleanupAll, firstJsonLine, installExitHandlers, rss, start } from './compare-procs.js';
import { asyncRuns, assertBuilt, startEmbedded } from './compare-weft.js';

/** bench/run.ts: this scenario starts its own servers and needs no test database templates. */
export const standalone = true;

const CLIENTS = 20;

export async function run(argv: string[] = process.argv.slice(3)): Promise<Record<string, unknown>> {
  const { values } = parseArgs({ args: argv, options: { prior: { type: 'string', default: '40000' }, runs: { type: 'string', default: '2000' } }, strict: true });
  const prior = Number(values.prior);
  const runs = Number(values.runs);
  if (!Number.isInteger(prior) || prior < 0 || !Number.isInteger(runs) || runs < 1) throw new Error('--prior must be an integer >= 0 and --runs >= 1');
  assertBuilt();
  installExitHandlers();
  try {
    const upstream = start('upstream', process.execPath, ['--import', 'tsx', 'bench/compare-servers.ts', 'upstream']);
    const { port } = await firstJsonLine<{ port: number }>(upstream);
    const weft = await startEmbedded(`http://127.0.0.1:${port}/v1`);
    const started = Date.now();
    if (prior > 0) await asyncRuns(weft, 'growth-prior', prior, CLIENTS);
    const priorSeconds = (Date.now() - started) / 1000;
    const measured = await asyncRuns(weft, 'growth-measured', runs, CLIENTS);
    return {
      prior, priorRunsPerSecond: Math.round(prior / priorSeconds), ...measured, clients: CLIENTS,
      rssMb: rss(weft.api().child.pid)?.rssMb,
    };
  } finally {
    await cleanupAll();
  }
}
