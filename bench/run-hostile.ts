// run-hostile: what a run's own results do to the server that answers them. Two shapes found by hand on
// 2026-12-02: a value nested thousands deep returned from code that needs an isolate (it crossed from the
// sandbox process as a structured clone, whose deserializer overflowed the server's stack and ended it), and a
// thrown error of megabytes (kept whole in the answer, the log and every page of the log list). And one more
// thing a tenant's save makes the server answer: connectors whose small documents resolve to megabytes of
// operations (uncounted toward storage, and listed all in one body).
//
//   npm run bench -- run-hostile [--depths 900,3000,10000] [--error-mb 20] [--connectors 10]
//
// Weft from dist/main.js as `compare` runs it (embedded, npm start's flags, limits on with plans it cannot reach). For each depth: the
// answer's status, latency and size, `GET /healthz` polled meanwhile, and whether the server still answers.
// For the error: the sync answer's size, the log's and one page of the log list's, and their latencies. For the
// connectors: each save's status, the storage the workspace reports, and the list's first page (size, latency,
// `/healthz` polled meanwhile).
import { startEmbedded } from './compare-weft.js';
import { cleanupAll, installExitHandlers } from './compare-procs.js';
import { latencySummary, pollWhile, round2 } from './support.js';

export const standalone = true;

function option(argv: string[], name: string, fallback: string): string {
  const i = argv.indexOf(name);
  return i >= 0 ? argv[i + 1] : fallback;
}

export async function run(argv: string[]): Promise<Record<string, unknown>> {
  const depths = option(argv, '--depths', '900,3000,10000').split(',').map(Number);
  const errorMb = Number(option(argv, '--error-mb', '20'));
  const connectorCount = Number(option(argv, '--connectors', '10'));
  installExitHandlers();
  try {
    const w = await startEmbedded('http://127.0.0.1:9/v1', true);
    const headers = { 'x-api-key': w.apiKey, 'content-type': 'application/json' };
    const timed = async (method: string, path: string, body?: unknown) => {
      const t0 = performance.now();
      const r = await fetch(`${w.url}${path}`, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
      const text = await r.text();
      return { status: r.status, ms: round2(performance.now() - t0), bytes: Buffer.byteLength(text), text };
    };
    const deployed = async (name: string, code: string) => {
      const definition = {
        blocks: [{ id: 'start', type: 'start', name: 'Start', config: {} }, { id: 'f', type: 'function', name: 'F', config: { code } }],
        edges: [{ from: 'start', to: 'f' }],
      };
      const created = JSON.parse((await timed('POST', '/api/v1/workflows', { workspaceId: w.workspaceId, name, definition })).text) as { data: { workflow: { id: string } } };
      const id = created.data.workflow.id;
      await timed('POST', `/api/v1/workflows/${id}/deploy`);
      return id;
    };
    const alive = async () => (await fetch(`${w.url}/healthz`).then((r) => r.status, () => 0)) === 200;

    const nested = [];
    for (const depth of depths) {
      // The callback makes it code that needs an isolate: pure code never leaves the server.
      const id = await deployed(`deep-${depth}`, `let v = 1; for (let i = 0; i < ${depth}; i++) v = { a: v }; return [v].map((x) => x)[0];`);
      const answer = timed('POST', `/api/workflows/${id}/execute`, { inputs: {} }).catch((err: Error) => ({ status: 0, ms: 0, bytes: 0, text: err.message }));
      const healthz = latencySummary(await pollWhile(`${w.url}/healthz`, answer).catch(() => []));
      const a = await answer;
      const error = (() => {
        try {
          return (JSON.parse(a.text) as { error?: string }).error ?? null;
        } catch {
          return a.text.slice(0, 120);
        }
      })();
      nested.push({ depth, status: a.status, ms: a.ms, bytes: a.bytes, error, healthz, serverAnswersAfter: await alive() });
      if (!(await alive())) break;
    }

    let thrown: Record<string, unknown> = { skipped: 'the server stopped answering above' };
    if (await alive()) {
      const id = await deployed('huge-error', `throw new Error('y'.repeat(${Math.round(errorMb * 1024 * 1024)}))`);
      const answer = await timed('POST', `/api/workflows/${id}/execute`, { inputs: {} });
      const executionId = (JSON.parse(answer.text) as { executionId: string }).executionId;
      const log = await timed('GET', `/api/v1/logs/${executionId}`);
      const list = await timed('GET', `/api/v1/logs?workspaceId=${w.workspaceId}&workflowId=${id}`);
      thrown = {
        thrownChars: Math.round(errorMb * 1024 * 1024),
        answer: { status: answer.status, ms: answer.ms, bytes: answer.bytes },
        log: { status: log.status, ms: log.ms, bytes: log.bytes },
        listPage: { status: list.status, ms: list.ms, bytes: list.bytes },
      };
    }
    let connectors: Record<string, unknown> = { skipped: 'the server stopped answering above' };
    if (await alive()) {
      // 480 operations sharing one schema of about 12 KB by $ref: a 100 KB document, 7 MB resolved.
      const properties: Record<string, unknown> = {};
      for (let i = 0; i < 120; i++) properties[`field_${i}_${'x'.repeat(40)}`] = { type: 'string', description: 'd'.repeat(40) };
      const paths: Record<string, unknown> = {};
      for (let i = 0; i < 480; i++) paths[`/op${i}`] = { post: { operationId: `op${i}`, requestBody: { content: { 'application/json': { schema: { $ref: '#/components/schemas/Big' } } } }, responses: { 200: { description: 'ok' } } } };
      const spec = { openapi: '3.0.3', info: { title: 'big', version: '1' }, servers: [{ url: 'https://example.com' }], paths, components: { schemas: { Big: { type: 'object', properties } } } };
      const statuses: number[] = [];
      for (let i = 0; i < connectorCount; i++) statuses.push((await timed('POST', '/api/v1/connectors', { workspaceId: w.workspaceId, name: `big-${i}`, spec })).status);
      const usage = JSON.parse((await timed('GET', '/api/users/me/usage-limits')).text) as { storage?: { usedBytes?: number } };
      const list = timed('GET', `/api/v1/connectors?workspaceId=${w.workspaceId}`);
      const healthz = latencySummary(await pollWhile(`${w.url}/healthz`, list));
      const l = await list;
      const page = JSON.parse(l.text) as { data: { connectors: unknown[]; nextCursor?: string } };
      connectors = {
        documentBytes: JSON.stringify(spec).length, saves: statuses, storageUsedBytes: usage.storage?.usedBytes ?? null,
        listFirstPage: { status: l.status, ms: l.ms, bytes: l.bytes, connectors: page.data.connectors.length, more: page.data.nextCursor !== undefined }, healthz,
      };
    }
    await w.close();
    return { nested, thrown, connectors };
  } finally {
    await cleanupAll();
  }
}
