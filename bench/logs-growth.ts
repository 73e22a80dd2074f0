// The logs API as history grows:
//   npm run build
//   npm run bench -- logs-growth [--history 20000] [--samples 15]
// One `weft serve` on a fresh data directory (limits off), as in `compare`. Sync runs of the spec's answer path
// are pushed in (10 connections) until the workspace holds 1,000 runs, then `--history`; at each size every
// query below is sent `--samples` times one after another and its median and worst latency reported, beside
// /healthz as the baseline of the same moment. The queries are what the dashboard and scripts written for the
// reference service send: the default page, one workflow's, oldest first, a filter that matches nothing (so
// the scan passes over every run: the worst case the scan gate and query timeout bound), a cost filter that
// matches nothing (one usage lookup per run), and a details=full page with outputs and trace spans.
import { parseArgs } from 'node:util';
import { cleanupAll, firstJsonLine, installExitHandlers, request, start } from './compare-procs.js';
import { assertBuilt, deployWorkflow, startEmbedded, syncPaths } from './compare-weft.js';
import { load, median } from './support.js';

/** bench/run.ts: this scenario starts its own servers and needs no test database templates. */
export const standalone = true;

export async function run(argv: string[] = process.argv.slice(3)): Promise<Record<string, unknown>> {
  const { values } = parseArgs({ args: argv, options: { history: { type: 'string', default: '20000' }, samples: { type: 'string', default: '15' } }, strict: true });
  const history = Number(values.history);
  const samples = Number(values.samples);
  if (!Number.isInteger(history) || history < 1000 || !Number.isInteger(samples) || samples < 1) throw new Error('--history must be an integer >= 1000 and --samples >= 1');
  assertBuilt();
  installExitHandlers();
  try {
    const upstream = start('upstream', process.execPath, ['--import', 'tsx', 'bench/compare-servers.ts', 'upstream']);
    const { port } = await firstJsonLine<{ port: number }>(upstream);
    const weft = await startEmbedded(`http://127.0.0.1:${port}/v1`, false);
    const headers = { 'x-api-key': weft.apiKey };
    const id = await deployWorkflow(weft, 'logs-growth', 'spec');
    const logs = `${weft.url}/api/v1/logs?workspaceId=${weft.workspaceId}&limit=100`;
    const queries: Record<string, string> = {
      healthz: `${weft.url}/healthz`,
      defaultPage: logs,
      workflowPage: `${logs}&workflowIds=${id}`,
      oldestFirst: `${logs}&order=asc`,
      noMatchTrigger: `${logs}&triggers=webhook`,
      noMatchCost: `${logs}&minCost=1`,
      fullWithData: `${logs}&details=full&includeFinalOutput=true&includeTraceSpans=true`,
    };
    let runs = 1; // the deploy check
    const measure = async () => {
      const out: Record<string, { p50Ms: number; maxMs: number; rows: number }> = {};
      for (const [name, url] of Object.entries(queries)) {
        const ms: number[] = [];
        let rows = 0;
        for (let i = 0; i < samples; i++) {
          const t0 = performance.now();
          const r = await request('GET', url, headers);
          ms.push(performance.now() - t0);
          if (r.status !== 200) throw new Error(`${name}: ${r.status} ${r.text.slice(0, 300)}`);
          rows = name === 'healthz' ? 0 : (r.json().data as unknown[]).length;
        }
        out[name] = { p50Ms: Math.round(median(ms) * 10) / 10, maxMs: Math.round(Math.max(...ms) * 10) / 10, rows };
      }
      return out;
    };
    const grow = async (to: number) => {
      const amount = to - runs;
      if (amount <= 0) return;
      const r = await load(`${weft.url}/api/workflows/${id}/execute`, {
        method: 'POST', amount, connections: 10, seconds: 3600, headers: { ...headers, 'content-type': 'application/json' }, body: JSON.stringify(syncPaths.spec.body),
      });
      if (r.non2xx > 0 || r.errors > 0) throw new Error(`pushing runs: ${r.non2xx} non-2xx, ${r.errors} errors`);
      runs = to;
    };
    await grow(1000);
    const small = await measure();
    await grow(history);
    const grown = await measure();
    return { history, samples, at1000: small, [`at${history}`]: grown };
  } finally {
    await cleanupAll();
  }
}
