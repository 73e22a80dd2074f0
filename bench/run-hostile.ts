// run-hostile: what a run's own results do to the server that answers them. Two shapes found by hand on
// 2026-12-02: a value nested thousands deep returned from code that needs an isolate (it crossed from the
// sandbox process as a structured clone, whose deserializer overflowed the server's stack and ended it), and a
// thrown error of megabytes (kept whole in the answer, the log and every page of the log list). And one more
// thing a tenant's save makes the server answer: connectors whose small documents resolve to megabytes of
// operations (uncounted toward storage, and listed all in one body). And MCP tools whose input schemas fill their
// 2 MB definitions, listed all in one answer by tools/list; and the versions list of a workflow deployed a hundred
// times, which read every listed version's definition to count its blocks; and the deployment status Sim's SDKs
// poll (no rate limit), which read and compared the draft and the deployed definition on every call; and the job
// poll (no rate limit either) of a run with a 3.5 MB output, which read and serialized the whole run each time.
//
//   npm run bench -- run-hostile [--depths 900,3000,10000] [--error-mb 20] [--connectors 10] [--deploys 20] [--mcp-tools 40] [--versions 101]
//
// Weft from dist/main.js as `compare` runs it (embedded, npm start's flags, limits on with plans it cannot reach). For each depth: the
// answer's status, latency and size, `GET /healthz` polled meanwhile, and whether the server still answers.
// For the error: the sync answer's size, the log's and one page of the log list's, and their latencies. For the
// connectors: each save's status, the storage the workspace reports, and the list's first page (size, latency,
// `/healthz` polled meanwhile). For the deploys: a workflow of a 1.9 MB definition saved (changed) and deployed
// again and again (random text, as a real definition does not compress away), the storage the workspace reports and how much the data directory grew.
// For the MCP tools: the first tools/list answer (status, size, latency, `/healthz` polled meanwhile) and a client
// following nextCursor to the end. For the versions: a page of 100 versions of a 1.9 MB definition, three times
// one after another and five at once, `/healthz` polled meanwhile. For the status: ten clients polling
// `GET /api/workflows/{id}/status` of a 1.8 MB workflow whose draft differs from its deployed version for 5 s. For
// the job: ten clients polling `GET /api/jobs/{jobId}` of a finished async run with a 3.5 MB output for 5 s.
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { startEmbedded } from './compare-weft.js';
import { cleanupAll, installExitHandlers } from './compare-procs.js';
import { latencySummary, pollWhile, round2 } from './support.js';

export const standalone = true;

/** Bytes of the files under `dir`. */
function directoryBytes(dir: string | undefined): number {
  if (dir === undefined) return 0;
  let total = 0;
  for (const e of fs.readdirSync(dir, { withFileTypes: true, recursive: true })) {
    if (e.isFile()) total += fs.statSync(path.join(e.parentPath, e.name)).size;
  }
  return total;
}

function option(argv: string[], name: string, fallback: string): string {
  const i = argv.indexOf(name);
  return i >= 0 ? argv[i + 1] : fallback;
}

export async function run(argv: string[]): Promise<Record<string, unknown>> {
  const depths = option(argv, '--depths', '900,3000,10000').split(',').map(Number);
  const errorMb = Number(option(argv, '--error-mb', '20'));
  const connectorCount = Number(option(argv, '--connectors', '10'));
  const deployCount = Number(option(argv, '--deploys', '20'));
  const mcpToolCount = Number(option(argv, '--mcp-tools', '40'));
  const versionCount = Number(option(argv, '--versions', '101'));
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
    let deploys: Record<string, unknown> = { skipped: 'the server stopped answering above' };
    if (await alive()) {
      // Random text: it does not compress, so the versions take their size on disk too.
      const definition = () => ({
        blocks: [{ id: 'start', type: 'start', name: 'Start', config: {} }, { id: 'v', type: 'variables', name: 'V', config: { assignments: { big: randomBytes(1_400_000).toString('base64') } } }],
        edges: [{ from: 'start', to: 'v' }],
      });
      const usedBytes = async () => (JSON.parse((await timed('GET', '/api/users/me/usage-limits')).text) as { storage?: { usedBytes?: number } }).storage?.usedBytes ?? null;
      const before = { storage: await usedBytes(), dataDir: directoryBytes(w.dataDir) };
      const created = JSON.parse((await timed('POST', '/api/v1/workflows', { workspaceId: w.workspaceId, name: 'redeployed', definition: definition() })).text) as { data: { workflow: { id: string } } };
      const id = created.data.workflow.id;
      const statuses: number[] = [];
      const t0 = performance.now();
      for (let i = 0; i < deployCount; i++) {
        statuses.push((await timed('PUT', `/api/v1/workflows/${id}`, { name: 'redeployed', definition: definition() })).status);
        statuses.push((await timed('POST', `/api/v1/workflows/${id}/deploy`)).status);
      }
      const seconds = (performance.now() - t0) / 1000;
      deploys = {
        definitionBytes: JSON.stringify(definition()).length, deploys: deployCount, seconds: round2(seconds), statuses: [...new Set(statuses)],
        storageCountedBytes: before.storage === null ? null : ((await usedBytes()) ?? 0) - before.storage,
        dataDirGrewBytes: directoryBytes(w.dataDir) - before.dataDir,
      };
    }
    let mcpTools: Record<string, unknown> = { skipped: 'the server stopped answering above' };
    if (await alive()) {
      const statuses = new Set<number>();
      for (let i = 0; i < mcpToolCount; i++) {
        const definition = { blocks: [{ id: 'start', type: 'start', name: 'Start', config: { inputFormat: [{ name: 'q', type: 'string', description: 'd'.repeat(1_900_000) }] } }], edges: [] };
        const created = await timed('POST', '/api/v1/workflows', { workspaceId: w.workspaceId, name: `tool ${i}`, definition });
        statuses.add(created.status);
        if (created.status !== 201) break;
        statuses.add((await timed('POST', `/api/v1/workflows/${(JSON.parse(created.text) as { data: { workflow: { id: string } } }).data.workflow.id}/deploy`)).status);
      }
      const mcpHeaders = { ...headers, accept: 'application/json, text/event-stream' };
      const list = async (cursor?: string) => {
        const t0 = performance.now();
        const r = await fetch(`${w.url}/api/mcp/${w.workspaceId}`, { method: 'POST', headers: mcpHeaders, body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list', params: cursor ? { cursor } : {} }) });
        const text = await r.text();
        const data = text.split('\n').find((l) => l.startsWith('data: '));
        const msg = data ? (JSON.parse(data.slice(6)) as { result?: { tools: unknown[]; nextCursor?: string } }) : {};
        return { status: r.status, ms: round2(performance.now() - t0), bytes: Buffer.byteLength(text), tools: msg.result?.tools.length ?? null, nextCursor: msg.result?.nextCursor };
      };
      const first = list();
      const healthz = latencySummary(await pollWhile(`${w.url}/healthz`, first));
      const f = await first;
      let pages = 1;
      let tools = f.tools ?? 0;
      let bytes = f.bytes;
      let cursor = f.nextCursor;
      const t0 = performance.now();
      while (cursor) {
        const p = await list(cursor);
        pages++;
        tools += p.tools ?? 0;
        bytes += p.bytes;
        cursor = p.nextCursor;
      }
      mcpTools = {
        tools: mcpToolCount, saves: [...statuses],
        firstAnswer: { status: f.status, ms: f.ms, bytes: f.bytes, tools: f.tools, more: f.nextCursor !== undefined }, healthz,
        allPages: { pages, tools, bytes, msAfterFirst: round2(performance.now() - t0) },
      };
    }
    let versions: Record<string, unknown> = { skipped: 'the server stopped answering above' };
    if (await alive()) {
      const definition = (i: number) => ({
        blocks: [{ id: 'start', type: 'start', name: 'Start', config: {} }, { id: 'v', type: 'variables', name: 'V', config: { assignments: { big: `${i}`.padEnd(1_900_000, 'x') } } }],
        edges: [{ from: 'start', to: 'v' }],
      });
      const created = JSON.parse((await timed('POST', '/api/v1/workflows', { workspaceId: w.workspaceId, name: 'versions', definition: definition(0) })).text) as { data: { workflow: { id: string } } };
      const id = created.data.workflow.id;
      const statuses = new Set<number>();
      for (let i = 0; i < versionCount; i++) {
        statuses.add((await timed('PUT', `/api/v1/workflows/${id}`, { name: 'versions', definition: definition(i) })).status);
        statuses.add((await timed('POST', `/api/v1/workflows/${id}/deploy`)).status);
      }
      const page = () => timed('GET', `/api/v1/workflows/${id}/versions?limit=100`);
      const oneByOne = (async () => {
        const out = [];
        for (let k = 0; k < 3; k++) out.push(await page());
        return out;
      })();
      const healthz = latencySummary(await pollWhile(`${w.url}/healthz`, oneByOne));
      const sequential = await oneByOne;
      const t0 = performance.now();
      const together = await Promise.all(Array.from({ length: 5 }, page));
      versions = {
        deployed: versionCount, saves: [...statuses],
        page: { status: sequential[0].status, bytes: sequential[0].bytes, ms: sequential.map((p) => p.ms) }, healthz,
        fiveAtOnce: { statuses: [...new Set(together.map((p) => p.status))], ms: round2(performance.now() - t0) },
      };
    }
    let status: Record<string, unknown> = { skipped: 'the server stopped answering above' };
    if (await alive()) {
      const definition = (tag: string) => ({
        blocks: [{ id: 'start', type: 'start', name: 'Start', config: {} }, { id: 'v', type: 'variables', name: 'V', config: { assignments: Object.fromEntries(Array.from({ length: 5000 }, (_, i) => [`k${i}`, tag.padEnd(350, 'x')])) } }],
        edges: [{ from: 'start', to: 'v' }],
      });
      const created = JSON.parse((await timed('POST', '/api/v1/workflows', { workspaceId: w.workspaceId, name: 'status', definition: definition('a') })).text) as { data: { workflow: { id: string } } };
      const id = created.data.workflow.id;
      await timed('POST', `/api/v1/workflows/${id}/deploy`);
      await timed('PUT', `/api/v1/workflows/${id}`, { definition: definition('b') });
      const first = JSON.parse((await timed('GET', `/api/workflows/${id}/status`)).text) as { needsRedeployment?: boolean };
      const t0 = performance.now();
      let answered = 0;
      const polling = Promise.all(Array.from({ length: 10 }, async () => {
        while (performance.now() - t0 < 5_000) {
          if ((await timed('GET', `/api/workflows/${id}/status`)).status === 200) answered++;
        }
      }));
      const healthz = latencySummary(await pollWhile(`${w.url}/healthz`, polling));
      await polling;
      status = { definitionBytes: JSON.stringify(definition('a')).length, needsRedeployment: first.needsRedeployment, perSecond: Math.round(answered / ((performance.now() - t0) / 1000)), healthz };
    }
    let job: Record<string, unknown> = { skipped: 'the server stopped answering above' };
    if (await alive()) {
      const id = await deployed('big-output', "return { big: 'x'.repeat(3_500_000) }");
      const queued = JSON.parse((await timed('POST', `/api/workflows/${id}/execute`, { async: true })).text) as { jobId: string };
      let state = '';
      while (state !== 'completed' && state !== 'failed') {
        state = (JSON.parse((await timed('GET', `/api/jobs/${queued.jobId}`)).text) as { status: string }).status;
        if (state !== 'completed' && state !== 'failed') await new Promise((r) => setTimeout(r, 100));
      }
      const t0 = performance.now();
      let answered = 0;
      let bytes = 0;
      const polling = Promise.all(Array.from({ length: 10 }, async () => {
        while (performance.now() - t0 < 5_000) {
          const r = await timed('GET', `/api/jobs/${queued.jobId}`);
          if (r.status === 200) answered++;
          bytes += r.bytes;
        }
      }));
      const healthz = latencySummary(await pollWhile(`${w.url}/healthz`, polling));
      await polling;
      job = { state, answerBytes: Math.round(bytes / Math.max(1, answered)), perSecond: Math.round(answered / ((performance.now() - t0) / 1000)), healthz };
    }
    await w.close();
    return { nested, thrown, connectors, deploys, mcpTools, versions, status, job };
  } finally {
    await cleanupAll();
  }
}
