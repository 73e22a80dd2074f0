import http from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createKey, createWorkspace } from '../support/accounts.js';
import { request, startTestServer, type TestServer } from '../support/harness.js';
import { deploy, fn, start, waitForJob } from '../support/workflows.js';

let t: TestServer;
let upstream: http.Server;
let upstreamUrl: string;
let upstreamHits = 0;

beforeAll(async () => {
  t = await startTestServer({ env: { WEFT_ALLOW_PRIVATE_NETWORK: 'true', WEFT_DEFAULT_PLAN: 'enterprise' } });
  upstream = http.createServer((req, res) => {
    upstreamHits++;
    res.setHeader('content-type', 'application/json');
    res.end(JSON.stringify({ path: req.url, ok: true }));
  });
  await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', () => r()));
  const addr = upstream.address();
  upstreamUrl = `http://127.0.0.1:${typeof addr === 'object' && addr ? addr.port : 0}`;
});
afterAll(async () => {
  await t?.close();
  upstream?.close();
});

const echo = {
  blocks: [start([{ name: 'name', type: 'string', required: true }, { name: 'n', type: 'number', default: 1 }]), fn('greet', 'return { text: "hi " + <start.name>, twice: <start.n> * 2 }', 'Greet')],
  edges: [{ from: 'start', to: 'greet' }],
};

describe('execute (sync)', () => {
  it('runs with {inputs} and with top-level fields, returning the spec envelope', async () => {
    const id = await deploy(t, 'echo', echo);
    for (const body of [{ inputs: { name: 'ada', n: '21' } }, { name: 'ada', n: 21 }]) {
      const r = await t.call('POST', `/api/workflows/${id}/execute`, body);
      expect(r.status).toBe(200);
      expect(r.body.success).toBe(true);
      expect(r.body.output).toEqual({ text: 'hi ada', twice: 42 });
      expect(r.body.executionId).toMatch(/^[0-9a-f-]{36}$/);
      expect(r.body.metadata.duration).toBeGreaterThanOrEqual(0);
      expect(Date.parse(r.body.metadata.startTime)).toBeGreaterThan(0);
      const sync = r.body.limits.workflowExecutionRateLimit.sync;
      expect(sync).toMatchObject({ requestsPerMinute: 600, maxBurst: 1200 });
      expect(typeof sync.remaining).toBe('number');
      expect(Date.parse(sync.resetAt)).toBeGreaterThan(0);
      expect(r.body.limits.usage).toMatchObject({ plan: 'enterprise', isExceeded: false });
    }
  });

  it('answers input the database cannot store (NUL, an unpaired surrogate) with 400, sync and async, and runs nothing', async () => {
    const id = await deploy(t, 'unstorable-input', { blocks: [start()], edges: [] });
    for (const value of [String.raw`"a\u0000"`, String.raw`"\ud800"`]) {
      for (const extra of ['', ',"async":true']) {
        const r = await request(`${t.url}/api/workflows/${id}/execute`, 'POST', `{"input":{"a":${value}}${extra}}`, { 'x-api-key': t.apiKey, 'content-type': 'application/json' });
        expect(r.status, value + extra).toBe(400);
      }
    }
    expect(await t.server.ctx.db.query('SELECT 1 FROM executions WHERE workflow_id = $1', [id])).toHaveLength(0);
  });

  it('answers a missing required input with 400 naming the field', async () => {
    const id = await deploy(t, 'echo-required', echo);
    const r = await t.call('POST', `/api/workflows/${id}/execute`, {});
    expect(r.status).toBe(400);
    expect(r.body.success).toBe(false);
    expect(r.body.error).toMatch(/name/);
  });

  it('lets a Response block set status, headers and body', async () => {
    const id = await deploy(t, 'responder', {
      blocks: [start([{ name: 'x', type: 'number' }]), fn('calc', 'return { y: <start.x> + 1 }', 'Calc'),
        { id: 'reply', type: 'response', name: 'Reply', config: { status: 201, headers: { 'X-Custom': 'yes' }, data: { result: '<calc.y>' } } }],
      edges: [{ from: 'start', to: 'calc' }, { from: 'calc', to: 'reply' }],
    });
    const r = await t.call('POST', `/api/workflows/${id}/execute`, { x: 41 });
    expect(r.status).toBe(201);
    expect(r.headers.get('x-custom')).toBe('yes');
    expect(r.body).toEqual({ result: 42 });
  });

  it('reports a failed run with success false and the block named', async () => {
    const id = await deploy(t, 'thrower', { blocks: [start(), fn('boom', 'throw new Error("kaput")', 'Boom Block')], edges: [{ from: 'start', to: 'boom' }] });
    const r = await t.call('POST', `/api/workflows/${id}/execute`, {});
    expect(r.status).toBe(500);
    expect(r.body.success).toBe(false);
    expect(r.body.error).toMatch(/Boom Block/);
    expect(r.body.error).toMatch(/kaput/);
  });

  it('calls http blocks and runs parallels and loops', async () => {
    const id = await deploy(t, 'fanout', {
      blocks: [
        start([{ name: 'paths', type: 'array' }]),
        { id: 'fan', type: 'parallel', name: 'Fan', config: { kind: 'collection', items: '<start.paths>' },
          blocks: [{ id: 'get', type: 'http', name: 'Get', config: { url: `${upstreamUrl}<parallel.currentItem>` } }] },
        fn('collect', 'return <fan.results>.map((r) => r.data.path)', 'Collect'),
      ],
      edges: [{ from: 'start', to: 'fan' }, { from: 'fan', to: 'collect' }],
    });
    const before = upstreamHits;
    const r = await t.call('POST', `/api/workflows/${id}/execute`, { paths: ['/a', '/b', '/c'] });
    expect(r.status).toBe(200);
    expect(r.body.output).toEqual(['/a', '/b', '/c']);
    expect(upstreamHits - before).toBe(3);
  });
});

describe('execute gates', () => {
  it('403 when not deployed, 404 when unknown or in another workspace', async () => {
    const c = await t.call('POST', '/api/v1/workflows', { workspaceId: t.workspaceId, name: 'undeployed', definition: echo });
    const r = await t.call('POST', `/api/workflows/${c.body.data.workflow.id}/execute`, { name: 'x' });
    expect(r.status).toBe(403);
    expect(r.body).toEqual({ error: 'Workflow is not deployed' });
    const u = await t.call('POST', '/api/workflows/00000000-0000-4000-8000-000000000000/execute', {});
    expect(u.status).toBe(404);
    expect(u.body).toEqual({ error: 'Workflow not found' });

    const other = await createWorkspace(t.server.ctx.db, `ex-other-${Date.now()}`, t.userId, 'enterprise');
    const key = await createKey(t.server.ctx.db, { workspaceId: other.id, userId: t.userId, type: 'workspace' });
    const theirs = await request(`${t.url}/api/v1/workflows`, 'POST', { workspaceId: other.id, name: 'theirs', definition: echo }, { 'x-api-key': key.secret });
    await request(`${t.url}/api/v1/workflows/${theirs.body.data.workflow.id}/deploy`, 'POST', undefined, { 'x-api-key': key.secret });
    const foreign = await t.call('POST', `/api/workflows/${theirs.body.data.workflow.id}/execute`, { name: 'x' });
    expect(foreign.status).toBe(404);
  });

  it('401 without a key; 400 for malformed JSON, an array body, a bad execution id', async () => {
    const id = await deploy(t, 'gates', echo);
    const noKey = await request(`${t.url}/api/workflows/${id}/execute`, 'POST', {});
    expect(noKey.status).toBe(401);
    const bad = await t.call('POST', `/api/workflows/${id}/execute`, '{"name": ');
    expect(bad.status).toBe(400);
    expect(bad.body).toEqual({ error: 'Invalid JSON in request body' });
    const arr = await t.call('POST', `/api/workflows/${id}/execute`, '[1,2]');
    expect(arr.status).toBe(400);
    expect(arr.body.error).toBe('Invalid request body');
    const badId = await t.call('POST', `/api/workflows/${id}/execute`, { name: 'x' }, { 'x-execution-id': 'has spaces!' });
    expect(badId.status).toBe(400);
    const count = await t.server.ctx.db.query<{ n: number }>('SELECT count(*)::int AS n FROM executions WHERE workflow_id = $1', [id]);
    expect(count[0].n).toBe(0);
  });

  it('makes X-Execution-Id idempotent: a repeat is 409 and never runs twice', async () => {
    const id = await deploy(t, 'idem', {
      blocks: [start(), { id: 'get', type: 'http', name: 'Get', config: { url: `${upstreamUrl}/idem` } }],
      edges: [{ from: 'start', to: 'get' }],
    });
    const before = upstreamHits;
    const execId = `order-${Date.now()}`;
    const results = await Promise.all([1, 2, 3].map(() => t.call('POST', `/api/workflows/${id}/execute`, {}, { 'x-execution-id': execId })));
    const statuses = results.map((r) => r.status).sort();
    expect(statuses).toEqual([200, 409, 409]);
    const conflict = results.find((r) => r.status === 409)!;
    expect(conflict.body).toMatchObject({ error: 'Execution ID has already been used', code: 'EXECUTION_ID_CONFLICT', executionId: execId });
    expect(upstreamHits - before).toBe(1);
    const asyncRepeat = await t.call('POST', `/api/workflows/${id}/execute`, { async: true }, { 'idempotency-key': execId });
    expect(asyncRepeat.status).toBe(409);
  });
});

describe('execute (async) and jobs', () => {
  it('queues a job with body async or the header, and completes it', async () => {
    const id = await deploy(t, 'async-echo', echo);
    const a = await t.call('POST', `/api/workflows/${id}/execute`, { inputs: { name: 'bob' }, async: true });
    expect(a.status).toBe(202);
    expect(a.body).toMatchObject({ success: true, async: true, message: 'Workflow execution queued' });
    expect(a.body.jobId).toBe(`job_${a.body.executionId}`);
    expect(a.body.statusUrl).toBe(`${t.url}/api/jobs/${a.body.jobId}`);
    const done = await waitForJob(t, a.body.jobId);
    expect(done).toMatchObject({ success: true, taskId: a.body.jobId, status: 'completed' });
    expect(done.output.output).toEqual({ text: 'hi bob', twice: 2 });
    expect(done.metadata.duration).toBeGreaterThanOrEqual(0);
    expect(Date.parse(done.metadata.completedAt)).toBeGreaterThan(0);

    const h = await t.call('POST', `/api/workflows/${id}/execute`, { name: 'eve' }, { 'x-execution-mode': 'async' });
    expect(h.status).toBe(202);
    expect((await waitForJob(t, h.body.jobId)).status).toBe('completed');
  });

  it("answers a finished job's output as the run returned it, the same on every poll", async () => {
    // Text that JSON escapes (quotes, backslashes, control characters, a line separator) and text it does not.
    const odd = 'quote " backslash \\ tab \t newline \n sep \u2028 é 漢字 🎉';
    const code = `return { odd: ${JSON.stringify(odd)}, list: [1, 2.5, -0.001, 1e21, null, true], nested: { a: { b: [{ c: 'd' }] } }, empty: {} }`;
    const id = await deploy(t, 'async-shapes', { blocks: [start(), fn('shape', code, 'Shape')], edges: [{ from: 'start', to: 'shape' }] });
    const a = await t.call('POST', `/api/workflows/${id}/execute`, { async: true });
    const done = await waitForJob(t, a.body.jobId);
    expect(done.status).toBe('completed');
    const expected = { odd, list: [1, 2.5, -0.001, 1e21, null, true], nested: { a: { b: [{ c: 'd' }] } }, empty: {} };
    expect(done.output).toEqual({ success: true, workflowId: id, executionId: a.body.executionId, output: expected, executedAt: done.metadata.completedAt });
    const again = await t.call('GET', `/api/jobs/${a.body.jobId}`);
    expect(again.status).toBe(200);
    expect(again.headers.get('content-type')).toMatch(/^application\/json/);
    expect(again.body).toEqual(done);
  });

  it('reports a failed job with its error', async () => {
    const id = await deploy(t, 'async-fail', { blocks: [start(), fn('bad', 'throw new Error("nope")', 'Bad')], edges: [{ from: 'start', to: 'bad' }] });
    const a = await t.call('POST', `/api/workflows/${id}/execute`, { async: true });
    const done = await waitForJob(t, a.body.jobId);
    expect(done.status).toBe('failed');
    expect(done.error).toMatch(/Bad/);
    expect(done.output).toBeUndefined();
  });

  it('404 for unknown jobs and other workspaces\' jobs; 401 without a key', async () => {
    const r = await t.call('GET', '/api/jobs/job_nope');
    expect(r.status).toBe(404);
    expect(r.body).toEqual({ error: 'Task not found', code: 'TASK_NOT_FOUND' });
    const n = await request(`${t.url}/api/jobs/job_nope`, 'GET');
    expect(n.status).toBe(401);
    expect(n.body.code).toBe('AUTHENTICATION_REQUIRED');
    const id = await deploy(t, 'async-private', echo);
    const a = await t.call('POST', `/api/workflows/${id}/execute`, { name: 'x', async: true });
    const other = await createWorkspace(t.server.ctx.db, `job-other-${Date.now()}`, t.userId, 'free');
    const key = await createKey(t.server.ctx.db, { workspaceId: other.id, userId: t.userId, type: 'workspace' });
    const foreign = await request(`${t.url}/api/jobs/${a.body.jobId}`, 'GET', undefined, { 'x-api-key': key.secret });
    expect(foreign.status).toBe(404);
  });
});

describe('logs', () => {
  it('writes a log for every run and filters, pages and details them', async () => {
    const id = await deploy(t, 'logged', echo);
    await t.call('POST', `/api/workflows/${id}/execute`, { name: 'l1' });
    await t.call('POST', `/api/workflows/${id}/execute`, {});
    const job = await t.call('POST', `/api/workflows/${id}/execute`, { name: 'l3', async: true });
    await waitForJob(t, job.body.jobId);
    const all = await t.call('GET', `/api/v1/logs?workspaceId=${t.workspaceId}&workflowId=${id}`);
    expect(all.status).toBe(200);
    expect(all.body.data).toHaveLength(3);
    expect(all.body.nextCursor).toBeUndefined();
    expect(all.body.limits.workflowExecutionRateLimit.sync).toMatchObject({ requestsPerMinute: 600, maxBurst: 1200 });
    expect(all.body.limits.usage).toMatchObject({ plan: 'enterprise', isExceeded: false });
    const errors = await t.call('GET', `/api/v1/logs?workspaceId=${t.workspaceId}&workflowId=${id}&level=error`);
    expect(errors.body.data).toHaveLength(1);
    expect(errors.body.data[0].status).toBe('failed');
    const p1 = await t.call('GET', `/api/v1/logs?workspaceId=${t.workspaceId}&workflowId=${id}&limit=2`);
    expect(p1.body.data).toHaveLength(2);
    const p2 = await t.call('GET', `/api/v1/logs?workspaceId=${t.workspaceId}&workflowId=${id}&limit=2&cursor=${p1.body.nextCursor}`);
    expect(p2.body.data).toHaveLength(1);
    expect(p2.body.nextCursor).toBeUndefined();
    const detail = await t.call('GET', `/api/v1/logs/${all.body.data[0].id}`);
    expect(detail.status).toBe(200);
    const trace = detail.body.data.trace;
    expect(trace.map((s: { blockId: string }) => s.blockId)).toEqual(['start', 'greet']);
    expect(trace[1]).toMatchObject({ type: 'function', status: 'success', name: 'Greet' });
    expect(typeof trace[1].durationMs).toBe('number');
    // limit is clamped to 1..1000 as the reference clamps it; one that is no number is refused.
    expect((await t.call('GET', `/api/v1/logs?workspaceId=${t.workspaceId}&limit=1001`)).status).toBe(200);
    expect((await t.call('GET', `/api/v1/logs?workspaceId=${t.workspaceId}&limit=ten`)).status).toBe(400);
    expect((await t.call('GET', `/api/v1/logs/unknown`)).status).toBe(404);
  });
});
