// A real `weft serve` process at the default log level with traces exported to a local OTLP/HTTP
// receiver: one log line per request and per finished run on stderr, and request, run and block spans
// in the exported traces. Logs and traces do not depend on the database: PGlite only.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { ChildProcess } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bootstrappedDatabase, dbMode, request } from '../support/harness.js';
import { freePort, spawnServer } from '../support/cli.js';
import { fn, start } from '../support/workflows.js';

interface OtlpSpan {
  traceId: string; spanId: string; parentSpanId?: string; name: string; kind: number;
  startTimeUnixNano: string; endTimeUnixNano: string;
  attributes: { key: string; value: { stringValue?: string; intValue?: string | number } }[];
  status?: { code?: number };
}

const attr = (s: OtlpSpan, key: string) => {
  const v = s.attributes.find((a) => a.key === key)?.value;
  return v?.stringValue ?? (v?.intValue !== undefined ? Number(v.intValue) : undefined);
};

const exited = (child: ChildProcess) =>
  new Promise<number | null>((resolve) => (child.exitCode !== null ? resolve(child.exitCode) : child.once('exit', (code) => resolve(code))));

describe.skipIf(dbMode() === 'postgres')('request and run log lines, and OTLP traces', () => {
  const posts: { path: string; contentType: string | undefined; body: any }[] = [];
  let receiver: http.Server;
  let output: () => string;
  let lines: any[] = [];
  const spans: OtlpSpan[] = [];
  let resourceAttrs: { key: string; value: { stringValue?: string } }[] = [];
  let syncExecutionId: string;
  let asyncExecutionId: string;
  let workflowId: string;
  let workspaceId: string;
  const callerTraceId = '4bf92f3577b34da6a3ce929d0e0e4736';
  const callerSpanId = '00f067aa0ba902b7';

  beforeAll(async () => {
    receiver = http.createServer((req, res) => {
      let raw = '';
      req.on('data', (c: Buffer) => (raw += c.toString()));
      req.on('end', () => {
        posts.push({ path: req.url ?? '', contentType: req.headers['content-type'], body: JSON.parse(raw) });
        res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
      });
    });
    await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', () => r()));
    const otlp = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`;

    const boot = await bootstrappedDatabase();
    workspaceId = boot.workspaceId;
    const server = await spawnServer({ ...boot.env, LOG_LEVEL: 'info', OTEL_EXPORTER_OTLP_ENDPOINT: otlp, OTEL_SERVICE_NAME: 'weft-under-test' }, await freePort());
    output = server.output;
    const call = (method: string, p: string, body?: unknown, headers: Record<string, string> = {}) =>
      request(server.url + p, method, body, { 'x-api-key': boot.apiKey, ...headers });
    try {
      const created = await call('POST', '/api/v1/workflows', {
        workspaceId, name: 'observed',
        definition: {
          blocks: [
            start([{ name: 'n', type: 'number', default: 1 }]),
            fn('double', 'return { value: <start.n> * 2 }', 'Double'),
            { id: 'reply', type: 'response', name: 'Reply', config: { data: { value: '<double.value>' } } },
          ],
          edges: [{ from: 'start', to: 'double' }, { from: 'double', to: 'reply' }],
        },
      });
      expect(created.status).toBe(201);
      workflowId = created.body.data.workflow.id;
      expect((await call('POST', `/api/v1/workflows/${workflowId}/deploy`)).status).toBe(200);
      const sync = await call('POST', `/api/workflows/${workflowId}/execute`, { n: 21 }, {
        'x-request-id': 'req-sync-1', traceparent: `00-${callerTraceId}-${callerSpanId}-01`,
      });
      expect(sync.status).toBe(200);
      syncExecutionId = sync.headers.get('x-execution-id')!;
      const queued = await call('POST', `/api/workflows/${workflowId}/execute`, { inputs: { n: 2 }, async: true });
      expect(queued.status).toBe(202);
      asyncExecutionId = queued.body.executionId ?? queued.body.taskId;
      for (;;) {
        const job = await call('GET', `/api/jobs/${asyncExecutionId}`);
        if (job.body?.status === 'completed' || job.body?.status === 'failed') break;
        await new Promise((r) => setTimeout(r, 50));
      }
      expect((await call('GET', '/healthz')).status).toBe(200);
    } finally {
      // A clean stop flushes the batched spans.
      server.child.kill('SIGTERM');
      expect(await exited(server.child)).toBe(0);
    }
    lines = output().split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l));
    for (const p of posts) {
      for (const rs of p.body.resourceSpans ?? []) {
        resourceAttrs = rs.resource?.attributes ?? resourceAttrs;
        for (const ss of rs.scopeSpans ?? []) spans.push(...(ss.spans ?? []));
      }
    }
  }, 120_000);

  afterAll(async () => {
    await new Promise((r) => receiver?.close(r));
  });

  it('logs one line per request at info, by route pattern, with the request id and workspace', () => {
    const mine = lines.filter((l) => l.requestId === 'req-sync-1');
    // One line for the request, nothing else from Fastify (no "incoming request"/"request completed" pair).
    expect(mine.filter((l) => l.msg === 'request')).toHaveLength(1);
    expect(mine.every((l) => l.msg === 'request')).toBe(true);
    expect(mine[0]).toMatchObject({
      level: 30, method: 'POST', route: '/api/workflows/:workflowId/execute', path: `/api/workflows/${workflowId}/execute`,
      status: 200, workspaceId, durationMs: expect.any(Number),
    });
    // Every API call got its line; probes only at debug (not shown at info).
    const requests = lines.filter((l) => l.msg === 'request');
    expect(requests.filter((l) => l.route === '/api/jobs/:jobId' || l.route?.startsWith('/api/jobs/')).length).toBeGreaterThanOrEqual(1);
    expect(requests.some((l) => l.route === '/api/v1/workflows' && l.status === 201)).toBe(true);
    expect(requests.some((l) => l.route === '/healthz')).toBe(false);
    expect(new Set(requests.map((l) => l.requestId)).size).toBe(requests.length);
  });

  it('logs one line per finished run with workflow, execution id, status, duration and cost', () => {
    const runs = lines.filter((l) => l.msg === 'run finished');
    expect(runs).toHaveLength(2);
    expect(runs.find((l) => l.executionId === syncExecutionId)).toMatchObject({
      level: 30, workflowId, workspaceId, trigger: 'api', mode: 'sync', status: 'completed', durationMs: expect.any(Number), costUsd: 0.005,
    });
    expect(runs.find((l) => l.executionId === asyncExecutionId)).toMatchObject({ workflowId, mode: 'async', status: 'completed', costUsd: 0.005 });
  });

  it('exports a server span per request over OTLP/HTTP, continuing the caller\'s trace', () => {
    expect(posts.length).toBeGreaterThan(0);
    expect(posts.every((p) => p.path === '/v1/traces' && p.contentType?.startsWith('application/json'))).toBe(true);
    expect(resourceAttrs).toContainEqual({ key: 'service.name', value: { stringValue: 'weft-under-test' } });
    const req = spans.find((s) => attr(s, 'weft.request_id') === 'req-sync-1')!;
    expect(req).toBeDefined();
    expect(req).toMatchObject({ name: 'POST /api/workflows/:workflowId/execute', kind: 2, traceId: callerTraceId, parentSpanId: callerSpanId });
    expect(attr(req, 'http.route')).toBe('/api/workflows/:workflowId/execute');
    expect(attr(req, 'http.request.method')).toBe('POST');
    expect(attr(req, 'http.response.status_code')).toBe(200);
    expect(attr(req, 'weft.workspace.id')).toBe(workspaceId);
    expect(spans.filter((s) => s.kind === 2).length).toBeGreaterThanOrEqual(4);
  });

  it('exports a run span under the request and a span per block under the run', () => {
    const req = spans.find((s) => attr(s, 'weft.request_id') === 'req-sync-1')!;
    const run = spans.find((s) => attr(s, 'weft.execution.id') === syncExecutionId)!;
    expect(run).toMatchObject({ name: 'run api', traceId: callerTraceId, parentSpanId: req.spanId });
    expect(attr(run, 'weft.workflow.id')).toBe(workflowId);
    expect(attr(run, 'weft.run.status')).toBe('completed');
    const blocks = spans.filter((s) => s.parentSpanId === run.spanId);
    expect(blocks.map((b) => b.name).sort()).toEqual(['block function', 'block response', 'block start']);
    const double = blocks.find((b) => attr(b, 'weft.block.id') === 'double')!;
    expect(attr(double, 'weft.block.name')).toBe('Double');
    expect(attr(double, 'weft.block.status')).toBe('success');
    // Blocks lie within their run.
    for (const b of blocks) {
      expect(BigInt(b.startTimeUnixNano)).toBeGreaterThanOrEqual(BigInt(run.startTimeUnixNano));
      expect(BigInt(b.endTimeUnixNano)).toBeLessThanOrEqual(BigInt(run.endTimeUnixNano) + 1_000_000n);
    }
    // The async run is a trace of its own (the worker has no request), with its blocks.
    const asyncRun = spans.find((s) => attr(s, 'weft.execution.id') === asyncExecutionId)!;
    expect(asyncRun.parentSpanId ?? '').toBe('');
    expect(attr(asyncRun, 'weft.run.mode')).toBe('async');
    expect(spans.filter((s) => s.parentSpanId === asyncRun.spanId)).toHaveLength(3);
  });
});
