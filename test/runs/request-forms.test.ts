// What callers written for the reference service send: bodies without a JSON content type or without a body at
// all, run ids the server minted, long run ids, bodies sent to unknown paths, and polls of a job whose run paused.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createKey, createWorkspace } from '../support/accounts.js';
import { request, startTestServer, type TestServer } from '../support/harness.js';
import { deploy, fn, start } from '../support/workflows.js';

let t: TestServer;
let greet: string;
beforeAll(async () => {
  t = await startTestServer({ env: { WEFT_DEFAULT_PLAN: 'enterprise' } });
  greet = await deploy(t, 'forms-greet', {
    blocks: [start([{ name: 'who', type: 'string' }]), fn('greet', 'return { text: "hello " + <start.who> }', 'Greet')],
    edges: [{ from: 'start', to: 'greet' }],
  });
});
afterAll(async () => {
  await t?.close();
});

/** A POST of the body as given: without a body no content type is sent; every case with one names its own. */
const rawPost = (path: string, body: string | undefined, headers: Record<string, string> = {}) =>
  request(t.url + path, 'POST', body, { 'x-api-key': t.apiKey, ...headers });

const runCount = async (workflowId: string) =>
  (await t.server.ctx.db.query<{ n: number }>('SELECT count(*)::int AS n FROM executions WHERE workflow_id = $1', [workflowId]))[0].n;

describe('execute and resume bodies', () => {
  it('runs with no body, an empty body, or JSON sent under another content type', async () => {
    const path = `/api/workflows/${greet}/execute`;
    for (const [body, headers] of [
      [undefined, {}],
      [undefined, { 'content-type': 'application/json' }],
      ['', { 'content-type': 'application/json' }],
    ] as const) {
      const r = await rawPost(path, body, headers);
      expect(r.status, r.text).toBe(200);
      expect(r.body.output).toEqual({ text: 'hello null' });
    }
    // curl -d sends form-encoded by default; the body is still JSON.
    for (const type of ['application/x-www-form-urlencoded', 'text/plain', 'application/xml']) {
      const r = await rawPost(path, '{"who":"curl"}', { 'content-type': type });
      expect(r.status, `${type}: ${r.text}`).toBe(200);
      expect(r.body.output).toEqual({ text: 'hello curl' });
    }
    const v2 = await rawPost(`/api/v2/workflows/${greet}/execute`, '{"input":{"who":"v2"}}', { 'content-type': 'text/plain' });
    expect(v2.status, v2.text).toBe(200);
    expect(v2.body.data.output).toEqual({ text: 'hello v2' });
  });

  it('refuses a body that is not JSON whatever its content type, or too large, running nothing', async () => {
    const before = await runCount(greet);
    const big = await rawPost(`/api/workflows/${greet}/execute`, JSON.stringify({ who: 'x'.repeat(11 * 1024 * 1024) }), { 'content-type': 'text/plain' });
    expect(big.status).toBe(413);
    expect(big.body).toEqual({ error: 'Workflow execution request body exceeds maximum size' });
    const r = await rawPost(`/api/workflows/${greet}/execute`, 'who=curl', { 'content-type': 'application/x-www-form-urlencoded' });
    expect(r.status).toBe(400);
    expect(r.body).toEqual({ error: 'Invalid JSON in request body' });
    const v2 = await rawPost(`/api/v2/workflows/${greet}/execute`, '<run/>', { 'content-type': 'application/xml' });
    expect(v2.status).toBe(400);
    expect(v2.body.error.code).toBe('BAD_REQUEST');
    const deep = await rawPost(`/api/workflows/${greet}/execute`, `${'['.repeat(100)}${']'.repeat(100)}`, { 'content-type': 'text/plain' });
    expect(deep.status).toBe(400);
    expect(await runCount(greet)).toBe(before);
  });

  it('refuses the reference\'s run controls it does not carry out, instead of running something else', async () => {
    const before = await runCount(greet);
    const path = `/api/workflows/${greet}/execute`;
    const cases: [Record<string, unknown>, Record<string, string>, string][] = [
      [{ triggerType: 'manual' }, {}, 'External callers cannot override triggerType'],
      [{ stopAfterBlockId: 'start' }, {}, 'stopAfterBlockId is not supported by this server'],
      [{ runFromBlock: { startBlockId: 'greet' } }, {}, 'runFromBlock is not supported by this server'],
      [{ workflowStateOverride: {} }, {}, 'workflowStateOverride is not supported by this server'],
      [{ includeFileBase64: true }, { 'x-execution-mode': 'async' }, 'Async execution does not support draft or override execution controls'],
    ];
    for (const [body, headers, error] of cases) {
      const r = await t.call('POST', path, body, headers);
      expect(r.status, JSON.stringify(body)).toBe(400);
      expect(r.body.error).toBe(error);
    }
    expect(await runCount(greet)).toBe(before);
    expect((await t.call('POST', path, { triggerType: 'api', who: 'ok' })).body.output).toEqual({ text: 'hello ok' });
  });

  it('resumes a pause with no body when its form needs nothing', async () => {
    const wf = await deploy(t, 'forms-ack', {
      blocks: [start(), { id: 'ack', type: 'human', name: 'Ack', config: { message: 'Seen?', fields: [] } }, fn('after', 'return { done: true }', 'After')],
      edges: [{ from: 'start', to: 'ack' }, { from: 'ack', to: 'after' }],
    });
    const run = await t.call('POST', `/api/workflows/${wf}/execute`, {});
    expect(run.status).toBe(200);
    const r = await rawPost(`/api/resume/${wf}/${run.body.executionId}/ack`, undefined);
    expect(r.status, r.text).toBe(200);
    expect(r.body).toMatchObject({ success: true, status: 'completed', output: { done: true } });
  });
});

describe('run ids', () => {
  it('refuses a caller id equal to a run id the server minted in the workspace, and the run stays readable', async () => {
    const first = await t.call('POST', `/api/v2/workflows/${greet}/execute`, { input: { who: 'first' } });
    expect(first.status).toBe(200);
    const runId = first.body.data.runId;
    const before = await runCount(greet);

    const again = await t.call('POST', `/api/v2/workflows/${greet}/execute`, { input: { who: 'second' } }, { 'x-run-id': runId });
    expect(again.status).toBe(409);
    expect(again.body.error).toMatchObject({ code: 'CONFLICT', details: { code: 'RUN_ID_CONFLICT', runId } });
    const legacy = await t.call('POST', `/api/workflows/${greet}/execute`, { who: 'third' }, { 'x-execution-id': runId });
    expect(legacy.status).toBe(409);
    expect(legacy.body).toMatchObject({ code: 'EXECUTION_ID_CONFLICT', executionId: runId });
    expect(await runCount(greet)).toBe(before);

    const read = await t.call('GET', `/api/v2/workflows/${greet}/runs/${runId}?includeOutput=true`);
    expect(read.status).toBe(200);
    expect(read.body.data.output).toEqual({ text: 'hello first' });

    // Another workspace may use the same string as its own id (ids are scoped), and learns nothing.
    const ws = await createWorkspace(t.server.ctx.db, `forms-other-${Date.now()}`, t.userId, 'enterprise');
    const key = (await createKey(t.server.ctx.db, { workspaceId: ws.id, userId: t.userId, type: 'workspace' })).secret;
    const created = await request(`${t.url}/api/v1/workflows`, 'POST', {
      workspaceId: ws.id, name: 'theirs', definition: { blocks: [start(), fn('x', 'return { theirs: true }')], edges: [{ from: 'start', to: 'x' }] },
    }, { 'x-api-key': key });
    const theirs = created.body.data.workflow.id;
    await request(`${t.url}/api/v1/workflows/${theirs}/deploy`, 'POST', undefined, { 'x-api-key': key });
    const other = await request(`${t.url}/api/v2/workflows/${theirs}/execute`, 'POST', {}, { 'x-api-key': key, 'x-run-id': runId });
    expect(other.status).toBe(200);
    expect(other.body.data.runId).toBe(runId);
    const mine = await t.call('GET', `/api/v2/workflows/${greet}/runs/${runId}?includeOutput=true`);
    expect(mine.body.data.output).toEqual({ text: 'hello first' });
  });

  it('reads, cancels and resumes by a run id of 128 characters', async () => {
    const runId = `r${'x'.repeat(127)}`;
    const r = await t.call('POST', `/api/v2/workflows/${greet}/execute`, { input: { who: 'long' } }, { 'x-run-id': runId });
    expect(r.status).toBe(200);
    const read = await t.call('GET', `/api/v2/workflows/${greet}/runs/${runId}`);
    expect(read.status).toBe(200);
    expect(read.body.data.runId).toBe(runId);
    const cancel = await t.call('POST', `/api/v2/workflows/${greet}/runs/${runId}/cancel`);
    expect(cancel.status).not.toBe(414);
    expect(cancel.body.data ?? cancel.body.error).toBeTypeOf('object');
  });
});

describe('errors of the legacy paths', () => {
  it('answers an unknown path as not found even when its body cannot be read', async () => {
    const v2 = await rawPost('/api/v2/nope', '{bad', { 'content-type': 'application/json' });
    expect(v2.status).toBe(404);
    expect(v2.body).toEqual({ error: { code: 'NOT_FOUND', message: 'Not found' } });
    const v1 = await rawPost('/api/v1/nope', '{bad', { 'content-type': 'application/json' });
    expect(v1.status).toBe(404);
    expect(v1.body.error).toBe('Route POST /api/v1/nope not found');
  });

  it('answers a path that exists under another method with 405 and Allow', async () => {
    const v2 = await t.call('GET', `/api/v2/workflows/${greet}/execute`);
    expect(v2.status).toBe(405);
    expect(v2.headers.get('allow')).toBe('POST');
    expect(v2.body.error.code).toBe('METHOD_NOT_ALLOWED');
    const legacy = await t.call('DELETE', `/api/workflows/${greet}/execute`);
    expect(legacy.status).toBe(405);
    expect(legacy.headers.get('allow')).toBe('POST');
    expect((await t.call('GET', '/api/v2/nope/execute')).status).toBe(404);
  });

  it('gives the workflow status 404 a code, as Sim\'s SDKs read it', async () => {
    const r = await t.call('GET', '/api/workflows/nope/status');
    expect(r.status).toBe(404);
    expect(r.body).toEqual({ error: 'Workflow not found', code: 'WORKFLOW_NOT_FOUND' });
  });

  it('names the run of a stream in X-Execution-Id', async () => {
    const r = await t.call('POST', `/api/workflows/${greet}/execute`, { who: 's', stream: true });
    expect(r.status).toBe(200);
    const id = r.headers.get('x-execution-id');
    expect(id).toMatch(/^[0-9a-f-]{36}$/);
    const log = await t.call('GET', `/api/v1/logs/${id}`);
    expect(log.status).toBe(200);
    expect(log.body.data.workflowId).toBe(greet);
    const chosen = await t.call('POST', `/api/workflows/${greet}/execute`, { who: 's', stream: true }, { 'x-execution-id': `stream-${Date.now()}` });
    expect(chosen.headers.get('x-execution-id')).toMatch(/^stream-\d+$/);
  });
});

describe('a run that answered as a stream and paused', () => {
  it('is resumed with a stream too: the final frame under the new run id, then [DONE]', async () => {
    const wf = await deploy(t, 'forms-stream-pause', {
      blocks: [start(), { id: 'ok', type: 'human', name: 'Ok', config: { message: 'Go?', fields: [{ name: 'go', type: 'boolean' }] } },
        fn('after', 'return { went: <ok.go> }', 'After')],
      edges: [{ from: 'start', to: 'ok' }, { from: 'ok', to: 'after' }],
    });
    const s = await t.call('POST', `/api/workflows/${wf}/execute`, { stream: true });
    expect(s.status).toBe(200);
    const first = s.headers.get('x-execution-id') as string;
    expect(s.text).toContain('"status":"paused"');
    const r = await t.call('POST', `/api/resume/${wf}/${first}/ok`, { input: { go: true } });
    expect(r.status).toBe(200);
    expect(r.headers.get('content-type')).toMatch(/text\/event-stream/);
    const resumedId = r.headers.get('x-execution-id');
    expect(resumedId).toMatch(/^[0-9a-f-]{36}$/);
    expect(resumedId).not.toBe(first);
    const frames = r.text.split('\n\n').filter(Boolean).map((f) => JSON.parse(f.replace(/^data: /, '')));
    expect(frames).toEqual([{ event: 'final', data: { success: true, output: { went: true } } }, '[DONE]']);
    const log = await t.call('GET', `/api/v1/logs/${resumedId}`);
    expect(log.body.data).toMatchObject({ workflowId: wf, trigger: 'resume' });

    // A run that answered with JSON still resumes with JSON.
    const plain = await t.call('POST', `/api/workflows/${wf}/execute`, {});
    const j = await t.call('POST', `/api/resume/${wf}/${plain.body.executionId}/ok`, { input: { go: false } });
    expect(j.headers.get('content-type')).toMatch(/application\/json/);
    expect(j.body).toMatchObject({ success: true, status: 'completed', output: { went: false } });
  });
});

describe('a job whose run pauses', () => {
  it('is completed with the pause as its output, so a poll until completed or failed ends', async () => {
    const wf = await deploy(t, 'forms-async-pause', {
      blocks: [start(), { id: 'ok', type: 'human', name: 'Ok', config: { message: 'Go?', fields: [{ name: 'go', type: 'boolean' }] } }],
      edges: [{ from: 'start', to: 'ok' }],
    });
    const q = await t.call('POST', `/api/workflows/${wf}/execute`, { async: true });
    expect(q.status).toBe(202);
    let job: any;
    for (let i = 0; i < 200; i++) {
      job = (await t.call('GET', `/api/jobs/${q.body.jobId}`)).body;
      if (job.status !== 'queued' && job.status !== 'processing') break;
      await new Promise((r) => setTimeout(r, 25));
    }
    expect(job.status).toBe('completed');
    expect(job.paused).toBe(true);
    expect(job.output).toMatchObject({ success: true, workflowId: wf, executionId: q.body.executionId });
    expect(job.output.output.data._resume).toMatchObject({ contextId: 'ok', executionId: q.body.executionId });
    expect(job.pause).toEqual(job.output.output);
    expect(job.metadata.completedAt).not.toBeUndefined();
  });
});
