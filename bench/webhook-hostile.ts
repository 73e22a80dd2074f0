// webhook-hostile: what a form body built to be slow to collect does to everyone else's requests. Anyone
// holding a webhook URL may post to it; a urlencoded or multipart body repeating one field name used to cost
// the square of its repeats to collect, on the event loop (webhooks/form-fields.ts).
//
//   npm run bench -- webhook-hostile [--fields 9000,30000,60000]
//
// Weft from dist/main.js as `compare` runs it (embedded, npm start's flags, limits off), one deployed workflow
// behind a webhook trigger (acknowledged at once). For each body of `fields` repeats of `a=1`, urlencoded:
// its answer and latency, and the worst and median latency of `GET /healthz` polled meanwhile.
import { startEmbedded } from './compare-weft.js';
import { cleanupAll, installExitHandlers } from './compare-procs.js';
import { latencySummary, pollWhile, round2 } from './support.js';

export const standalone = true;



export async function run(argv: string[]): Promise<Record<string, unknown>> {
  const i = argv.indexOf('--fields');
  const counts = (i >= 0 ? argv[i + 1] : '9000,30000,60000').split(',').map(Number);
  installExitHandlers();
  try {
    const w = await startEmbedded('http://127.0.0.1:9/v1', false);
    const headers = { 'x-api-key': w.apiKey, 'content-type': 'application/json' };
    const definition = {
      blocks: [
        { id: 'hook', type: 'webhook', name: 'Webhook', config: { responseMode: 'ack' } },
        { id: 'f', type: 'function', name: 'F', config: { code: 'return 1' } },
      ],
      edges: [{ from: 'hook', to: 'f' }],
    };
    const created = await (await fetch(`${w.url}/api/v1/workflows`, { method: 'POST', headers, body: JSON.stringify({ workspaceId: w.workspaceId, name: 'hook', definition }) })).json() as { data: { workflow: { id: string } } };
    const id = created.data.workflow.id;
    await (await fetch(`${w.url}/api/v1/workflows/${id}/deploy`, { method: 'POST', headers: { 'x-api-key': w.apiKey } })).arrayBuffer();
    const workflow = await (await fetch(`${w.url}/api/v1/workflows/${id}`, { headers: { 'x-api-key': w.apiKey } })).json() as { data: { workflow: { webhookUrl: string } } };
    const hookUrl = workflow.data.workflow.webhookUrl.replace(/^https?:\/\/[^/]+/, w.url);
    const results: Record<string, unknown>[] = [];
    for (const n of counts) {
      const body = Array.from({ length: n }, () => 'a=1').join('&');
      const t0 = performance.now();
      const post = fetch(hookUrl, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body })
        .then(async (r) => ({ status: r.status, ms: round2(performance.now() - t0), text: (await r.text()).slice(0, 80) }));
      const healthz = latencySummary(await pollWhile(`${w.url}/healthz`, post));
      results.push({ fields: n, bodyKb: round2(body.length / 1024), ...(await post), healthz });
    }
    await w.close();
    return { results };
  } finally {
    await cleanupAll();
  }
}
