// Sim's v2 run API over HTTP, against the shapes of reference/sim-v2-api.md: every field and type the
// SDKs read (section 5), the error envelope and codes, header formats, pagination, cancel in each
// state, resume (a new run id) and streaming frames.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addMember, createKey, createUser, createWorkspace } from '../support/accounts.js';
import { request, startTestServer, type TestResponse, type TestServer } from '../support/harness.js';
import { deploy, fn, start } from '../support/workflows.js';

let t: TestServer;
// One worker slot: a run waiting in a block holds it, so the next async run stays queued.
beforeAll(async () => {
  t = await startTestServer({ env: { WEFT_DEFAULT_PLAN: 'enterprise', WEFT_WORKER_CONCURRENCY: '1' } });
});
afterAll(async () => {
  await t?.close();
});

const v2 = (method: string, path: string, body?: unknown, headers: Record<string, string> = {}) => t.call(method, `/api/v2${path}`, body, headers);

const echo = {
  blocks: [start([{ name: 'name', type: 'string', required: true }]), fn('greet', 'return { text: "hi " + <start.name>, n: 2 }', 'Greet Block')],
  edges: [{ from: 'start', to: 'greet' }],
};
const slow = {
  blocks: [start(), { id: 'nap', type: 'wait', name: 'Nap', config: { seconds: 60 } }, fn('after', 'return { ran: true }', 'After')],
  edges: [{ from: 'start', to: 'nap' }, { from: 'nap', to: 'after' }],
};
const approval = {
  blocks: [start(), { id: 'gate', type: 'human', name: 'Gate', config: { message: 'OK?', fields: [{ name: 'ok', type: 'boolean', required: true }] } },
    fn('after', 'return { ok: <gate.ok> }', 'After')],
  edges: [{ from: 'start', to: 'gate' }, { from: 'gate', to: 'after' }],
};

/** The error envelope every v2 error has: an object with a code of the closed set and a message. */
function expectV2Error(r: TestResponse, status: number, code: string, message?: string | RegExp) {
  expect(r.status).toBe(status);
  expect(r.headers.get('cache-control')).toBe('private, no-store');
  expect(typeof r.body.error).toBe('object');
  expect(r.body.error.code).toBe(code);
  expect(typeof r.body.error.message).toBe('string');
  if (typeof message === 'string') expect(r.body.error.message).toBe(message);
  else if (message) expect(r.body.error.message).toMatch(message);
}

/** X-RateLimit-Limit and -Remaining are plain integers (Python int()s them); -Reset is ISO 8601 UTC. */
function expectRateHeaders(r: TestResponse) {
  expect(r.headers.get('x-ratelimit-limit')).toMatch(/^\d+$/);
  expect(r.headers.get('x-ratelimit-remaining')).toMatch(/^\d+$/);
  expect(r.headers.get('x-ratelimit-reset')).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
}

async function pollRun(wf: string, runId: string, until: (s: string) => boolean, query = ''): Promise<any> {
  for (let i = 0; ; i++) {
    const r = await v2('GET', `/workflows/${wf}/runs/${runId}${query}`);
    if (r.status === 200 && until(r.body.data.status)) return r.body.data;
    if (i > 600) throw new Error(`run ${runId} still ${r.body?.data?.status ?? r.status}`);
    await new Promise((res) => setTimeout(res, 25));
  }
}

const terminal = (s: string) => ['completed', 'failed', 'cancelled'].includes(s);

describe('v2 execute', () => {
  it('sync: 200 {data} with every field the SDKs read, X-Run-Id, integer rate-limit headers, private no-store', async () => {
    const wf = await deploy(t, 'v2-echo', echo);
    const r = await v2('POST', `/workflows/${wf}/execute`, { input: { name: 'ada' }, async: false });
    expect(r.status).toBe(200);
    expect(Object.keys(r.body)).toEqual(['data']);
    const d = r.body.data;
    expect(d).toEqual({
      runId: expect.stringMatching(/^[0-9a-f-]{36}$/), workflowId: wf, status: 'completed', output: { text: 'hi ada', n: 2 }, error: null,
      startedAt: expect.any(String), endedAt: expect.any(String), durationMs: expect.any(Number),
    });
    expect(new Date(d.startedAt).toISOString()).toBe(d.startedAt);
    expect(new Date(d.endedAt).toISOString()).toBe(d.endedAt);
    expect(r.headers.get('x-run-id')).toBe(d.runId);
    expect(r.headers.get('cache-control')).toBe('private, no-store');
    expect(r.headers.get('x-request-id')).toBeTruthy();
    expectRateHeaders(r);
  });

  it('sync: a failed run is in band (200, status failed, error object with code and block)', async () => {
    const wf = await deploy(t, 'v2-thrower', { blocks: [start(), fn('boom', 'throw new Error("kaput")', 'Boom')], edges: [{ from: 'start', to: 'boom' }] });
    const r = await v2('POST', `/workflows/${wf}/execute`, {});
    expect(r.status).toBe(200);
    expect(r.body.data.status).toBe('failed');
    expect(r.body.data.error).toMatchObject({ code: 'BLOCK_EXECUTION_FAILED', blockId: 'boom', blockName: 'Boom', blockType: 'function' });
    expect(r.body.data.error.message).toMatch(/kaput/);
    // A missing required input fails in the start block: INVALID_INPUT.
    const echoWf = await deploy(t, 'v2-echo-required', echo);
    const bad = await v2('POST', `/workflows/${echoWf}/execute`, { input: {} });
    expect(bad.status).toBe(200);
    expect(bad.body.data).toMatchObject({ status: 'failed', error: { code: 'INVALID_INPUT' } });
  });

  it('keeps a Response block inside output (v2 never lets it set the HTTP answer)', async () => {
    const wf = await deploy(t, 'v2-responder', {
      blocks: [start(), { id: 'reply', type: 'response', name: 'Reply', config: { status: 201, headers: { 'X-Custom': 'yes' }, data: { ok: true } } }],
      edges: [{ from: 'start', to: 'reply' }],
    });
    const r = await v2('POST', `/workflows/${wf}/execute`, {});
    expect(r.status).toBe(200);
    expect(r.headers.get('x-custom')).toBeNull();
    expect(r.body.data.output).toMatchObject({ data: { ok: true }, status: 201 });
  });

  it('async: exactly 202 with runId and an absolute statusUrl; polling reaches completed with output on request', async () => {
    const wf = await deploy(t, 'v2-async', echo);
    const r = await v2('POST', `/workflows/${wf}/execute`, { input: { name: 'bo' }, async: true, executionTimeoutSeconds: 60 });
    expect(r.status).toBe(202);
    const { runId, statusUrl } = r.body.data;
    expect(Object.keys(r.body.data).sort()).toEqual(['runId', 'statusUrl']);
    expect(statusUrl).toBe(`${t.url}/api/v2/workflows/${wf}/runs/${runId}`);
    expect(r.headers.get('x-run-id')).toBe(runId);
    expectRateHeaders(r);
    const run = await pollRun(wf, runId, terminal, '?includeOutput=true');
    expect(Object.keys(run).sort()).toEqual(['blockOutputs', 'cost', 'durationMs', 'endedAt', 'error', 'output', 'paused', 'runId', 'startedAt', 'status', 'trigger', 'workflowId'].sort());
    expect(run).toMatchObject({ runId, workflowId: wf, status: 'completed', trigger: 'api', paused: null, error: null, output: { text: 'hi bo', n: 2 }, blockOutputs: null });
    expect(run.cost).toEqual({ total: expect.any(Number) });
    expect(typeof run.durationMs).toBe('number');
    expect(Date.parse(run.endedAt)).toBeGreaterThanOrEqual(Date.parse(run.startedAt));
    // output only with includeOutput=true (flags: true/false/1/0, any case).
    expect((await v2('GET', `/workflows/${wf}/runs/${runId}`)).body.data.output).toBeNull();
    expect((await v2('GET', `/workflows/${wf}/runs/${runId}?includeOutput=%20TRUE%20`)).body.data.output).toEqual({ text: 'hi bo', n: 2 });
    expect((await v2('GET', `/workflows/${wf}/runs/${runId}?includeOutput=0`)).body.data.output).toBeNull();
    // blockOutputs keyed by selector; unknown ids are left out.
    const sel = await v2('GET', `/workflows/${wf}/runs/${runId}?selectedOutputs=greet.text,greet,nope.x`);
    expect(sel.body.data.blockOutputs).toEqual({ 'greet.text': 'hi bo', greet: { text: 'hi bo', n: 2 } });
  });

  it('a caller-chosen X-Run-Id is a one-shot claim: reuse is 409 RUN_ID_CONFLICT with the id', async () => {
    const wf = await deploy(t, 'v2-runid', echo);
    const ok = await v2('POST', `/workflows/${wf}/execute`, { input: { name: 'x' } }, { 'x-run-id': 'order-42.a:b_c' });
    expect(ok.status).toBe(200);
    expect(ok.body.data.runId).toBe('order-42.a:b_c');
    const again = await v2('POST', `/workflows/${wf}/execute`, { input: { name: 'x' }, async: true }, { 'x-run-id': 'order-42.a:b_c' });
    expectV2Error(again, 409, 'CONFLICT', 'Run ID has already been used');
    expect(again.body.error.details).toEqual({ code: 'RUN_ID_CONFLICT', runId: 'order-42.a:b_c' });
    expect(again.headers.get('x-run-id')).toBe('order-42.a:b_c');
    expectV2Error(await v2('POST', `/workflows/${wf}/execute`, {}, { 'x-run-id': 'bad id!' }), 400, 'BAD_REQUEST');
    const run = await v2('GET', `/workflows/${wf}/runs/order-42.a:b_c`);
    expect(run.body.data.status).toBe('completed');
  });

  it('answers each bad request with its code, status and message', async () => {
    const wf = await deploy(t, 'v2-errors', echo);
    const exec = (body: unknown, headers: Record<string, string> = {}) => v2('POST', `/workflows/${wf}/execute`, body, headers);
    expectV2Error(await exec({ async: true, stream: true }), 400, 'BAD_REQUEST', 'async and stream cannot be combined');
    expectV2Error(await exec({ async: true, selectedOutputs: ['greet.text'] }), 400, 'BAD_REQUEST', 'Async execution does not support streaming or output-shaping options');
    expectV2Error(await exec({ executionTimeoutSeconds: 5 }), 400, 'BAD_REQUEST', 'executionTimeoutSeconds is supported only for async execution');
    expectV2Error(await exec({ async: true, executionTimeoutSeconds: 0 }), 400, 'BAD_REQUEST');
    expectV2Error(await exec({ includeThinking: true }), 400, 'BAD_REQUEST', 'includeThinking and includeToolCalls require stream: true');
    // Strict bodies: an unknown key is a 400 whose details are zod issues.
    const unknown = await exec({ input: {}, inputs: {} });
    expectV2Error(unknown, 400, 'BAD_REQUEST');
    expect(Array.isArray(unknown.body.error.details)).toBe(true);
    expect(unknown.body.error.details[0]).toMatchObject({ code: expect.any(String), path: expect.any(Array), message: expect.any(String) });
    expectV2Error(await exec({ input: 'text' }), 400, 'BAD_REQUEST');
    const badJson = await exec('{"input":');
    expectV2Error(badJson, 400, 'BAD_REQUEST', 'Request body must be valid JSON');
    expect(badJson.body.error.details).toBeUndefined();
    expectV2Error(await v2('POST', `/workflows/${wf}/execute?x=1`, {}), 400, 'BAD_REQUEST');
    expectV2Error(await exec({}, { 'x-sim-via': Array.from({ length: 25 }, (_, i) => `w${i}`).join(',') }), 409, 'CONFLICT', 'Maximum workflow call chain depth (25) exceeded.');
    const big = await exec({ input: { name: 'x'.repeat(11 * 1024 * 1024) } });
    expectV2Error(big, 413, 'PAYLOAD_TOO_LARGE', 'Request body is too large');
    // Unknown and foreign workflows look alike.
    expectV2Error(await v2('POST', '/workflows/00000000-0000-4000-8000-000000000000/execute', {}), 404, 'NOT_FOUND', 'Workflow not found');
    expectV2Error(await v2('POST', '/workflows/not-a-uuid/execute', {}), 404, 'NOT_FOUND', 'Workflow not found');
    // Not deployed: 403 with details.code.
    const draft = await t.call('POST', '/api/v1/workflows', { workspaceId: t.workspaceId, name: 'v2-draft', definition: echo });
    const nd = await v2('POST', `/workflows/${draft.body.data.workflow.id}/execute`, {});
    expectV2Error(nd, 403, 'FORBIDDEN', 'Workflow is not deployed');
    expect(nd.body.error.details).toEqual({ code: 'WORKFLOW_NOT_DEPLOYED' });
  });

  it('401 with WWW-Authenticate and no rate-limit headers; unknown v2 paths are the v2 404 without auth', async () => {
    const wf = await deploy(t, 'v2-auth', echo);
    const none = await request(`${t.url}/api/v2/workflows/${wf}/execute`, 'POST', {});
    expectV2Error(none, 401, 'UNAUTHORIZED', 'API key required');
    expect(none.headers.get('www-authenticate')).toBe('SimApiKey realm="Sim API", header="x-api-key"');
    expect(none.headers.get('x-ratelimit-limit')).toBeNull();
    const bad = await request(`${t.url}/api/v2/workflows/${wf}/runs`, 'GET', undefined, { 'x-api-key': 'sk-weft-nope' });
    expectV2Error(bad, 401, 'UNAUTHORIZED', 'Invalid API key');
    expect(bad.headers.get('www-authenticate')).toContain('SimApiKey');
    for (const [method, path] of [['GET', '/api/v2'], ['GET', '/api/v2/nothing'], ['DELETE', `/api/v2/workflows/${wf}/runs/x/y/z`], ['PUT', '/api/v2/workflows']]) {
      const r = await request(`${t.url}${path}`, method);
      expect(r.status).toBe(404);
      expect(r.body).toEqual({ error: { code: 'NOT_FOUND', message: 'Not found' } });
    }
  });

  it('403 INSUFFICIENT_WORKSPACE_ROLE for a reader cancelling; a key of another workspace sees 404', async () => {
    const wf = await deploy(t, 'v2-roles', echo);
    const reader = await createUser(t.server.ctx.db, `reader-${Date.now()}@example.com`);
    await addMember(t.server.ctx.db, t.workspaceId, reader.id, 'read');
    const key = await createKey(t.server.ctx.db, { workspaceId: t.workspaceId, userId: reader.id, type: 'workspace' });
    const h = { 'x-api-key': key.secret };
    const run = await v2('POST', `/workflows/${wf}/execute`, { input: { name: 'r' } });
    expect((await request(`${t.url}/api/v2/workflows/${wf}/runs/${run.body.data.runId}`, 'GET', undefined, h)).status).toBe(200);
    const denied = await request(`${t.url}/api/v2/workflows/${wf}/runs/${run.body.data.runId}/cancel`, 'POST', undefined, h);
    expectV2Error(denied, 403, 'FORBIDDEN');
    expect(denied.body.error.details).toEqual({ code: 'INSUFFICIENT_WORKSPACE_ROLE' });
    const other = await createWorkspace(t.server.ctx.db, `v2-other-${Date.now()}`, t.userId, 'enterprise');
    const otherKey = await createKey(t.server.ctx.db, { workspaceId: other.id, userId: t.userId, type: 'workspace' });
    const foreign = await request(`${t.url}/api/v2/workflows/${wf}/runs/${run.body.data.runId}`, 'GET', undefined, { 'x-api-key': otherKey.secret });
    expectV2Error(foreign, 404, 'NOT_FOUND', 'Run not found');
    expectV2Error(await request(`${t.url}/api/v2/workflows/${wf}/execute`, 'POST', {}, { 'x-api-key': otherKey.secret }), 404, 'NOT_FOUND', 'Workflow not found');
    expectV2Error(await v2('GET', `/workflows/${wf}/runs/no-such-run`), 404, 'NOT_FOUND', 'Run not found');
  });

  it('streams selected block outputs as produced, then the final frame and "[DONE]"', async () => {
    const wf = await deploy(t, 'v2-stream', {
      blocks: [start([{ name: 'name', type: 'string' }]), fn('first', 'return { text: "one " + <start.name> }', 'First Step'),
        fn('second', 'return { obj: { a: 1 }, text: "two" }', 'Second')],
      edges: [{ from: 'start', to: 'first' }, { from: 'first', to: 'second' }],
    });
    const r = await v2('POST', `/workflows/${wf}/execute`, { input: { name: 'x' }, stream: true, selectedOutputs: ['First Step.text', 'second.obj', 'second_text', 'ghost.x'] });
    expect(r.status).toBe(200);
    expect(r.headers.get('content-type')).toMatch(/^text\/event-stream/);
    expect(r.headers.get('cache-control')).toBe('no-cache');
    expect(r.headers.get('x-accel-buffering')).toBe('no');
    expect(r.headers.get('x-run-id')).toBeNull();
    expectRateHeaders(r);
    const lines = r.text.split('\n\n').filter(Boolean);
    for (const l of lines) expect(l.startsWith('data: ')).toBe(true);
    const frames = lines.map((l) => JSON.parse(l.slice(6)));
    expect(frames).toEqual([
      { blockId: 'first', chunk: 'one x' },
      { blockId: 'second', chunk: '\n\n{\n  "a": 1\n}' },
      { blockId: 'second', chunk: '\n\ntwo' },
      { event: 'final', data: { success: true, output: {} } },
      '[DONE]',
    ]);
    expect(lines[lines.length - 1]).toBe('data: "[DONE]"');
    expect(r.headers.get('x-sim-stream-protocol')).toBeNull();
    // A client that negotiated the agent-events protocol is told the stream speaks it.
    const negotiated = await v2('POST', `/workflows/${wf}/execute`, { input: { name: 'z' }, stream: true, includeThinking: true },
      { 'x-sim-stream-protocol': 'other, agent-events-v1' });
    expect(negotiated.status).toBe(200);
    expect(negotiated.headers.get('x-sim-stream-protocol')).toBe('agent-events-v1');
    // Without selectedOutputs: no chunks, the final frame carries the whole output.
    const all = await v2('POST', `/workflows/${wf}/execute`, { input: { name: 'y' }, stream: true });
    const allFrames = all.text.split('\n\n').filter(Boolean).map((l) => JSON.parse(l.slice(6)));
    expect(allFrames).toEqual([{ event: 'final', data: { success: true, output: { obj: { a: 1 }, text: 'two' } } }, '[DONE]']);
    // A failed run ends with a final frame saying so.
    const failing = await deploy(t, 'v2-stream-fail', { blocks: [start(), fn('boom', 'throw new Error("nope")', 'Boom')], edges: [{ from: 'start', to: 'boom' }] });
    const f = await v2('POST', `/workflows/${failing}/execute`, { stream: true });
    const ff = f.text.split('\n\n').filter(Boolean).map((l) => JSON.parse(l.slice(6)));
    expect(ff[0]).toMatchObject({ event: 'final', data: { success: false, error: expect.stringMatching(/nope/) } });
    expect(ff[1]).toBe('[DONE]');
    // Errors before the stream starts are JSON envelopes.
    expectV2Error(await v2('POST', '/workflows/00000000-0000-4000-8000-000000000000/execute', { stream: true }), 404, 'NOT_FOUND');
  });
});

describe('v2 runs list', () => {
  it('pages by start time with an opaque cursor bound to the filters; nextCursor null on the last page', async () => {
    const wf = await deploy(t, 'v2-list', echo);
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) ids.push((await v2('POST', `/workflows/${wf}/execute`, { input: { name: `n${i}` } })).body.data.runId);
    ids.push((await v2('POST', `/workflows/${wf}/execute`, { input: {} })).body.data.runId); // failed
    const seen: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const r: TestResponse = await v2('GET', `/workflows/${wf}/runs?limit=2${cursor ? `&cursor=${cursor}` : ''}`);
      expect(r.status).toBe(200);
      expectRateHeaders(r);
      expect(Object.keys(r.body).sort()).toEqual(['data', 'nextCursor']);
      for (const item of r.body.data) {
        expect(Object.keys(item).sort()).toEqual(['cost', 'durationMs', 'endedAt', 'runId', 'startedAt', 'status', 'trigger', 'workflowId']);
        expect(item.workflowId).toBe(wf);
        seen.push(item.runId);
      }
      cursor = r.body.nextCursor;
      pages++;
    } while (cursor);
    expect(pages).toBe(3);
    expect(seen).toEqual([...ids].reverse());
    const asc = await v2('GET', `/workflows/${wf}/runs?order=asc&limit=100`);
    expect(asc.body.data.map((x: { runId: string }) => x.runId)).toEqual(ids);
    expect(asc.body.nextCursor).toBeNull();
    const failed = await v2('GET', `/workflows/${wf}/runs?status=failed`);
    expect(failed.body.data.map((x: { runId: string }) => x.runId)).toEqual([ids[5]]);
    const first = await v2('GET', `/workflows/${wf}/runs?limit=1&status=completed`);
    const mismatch = await v2('GET', `/workflows/${wf}/runs?limit=1&cursor=${first.body.nextCursor}`);
    expectV2Error(mismatch, 400, 'BAD_REQUEST', /^cursor does not match the requested filters/);
    // Only limit may change between pages.
    expect((await v2('GET', `/workflows/${wf}/runs?limit=3&status=completed&cursor=${first.body.nextCursor}`)).status).toBe(200);
    const invalid = await v2('GET', `/workflows/${wf}/runs?cursor=garbage`);
    expectV2Error(invalid, 400, 'BAD_REQUEST', 'cursor is not a valid pagination cursor. Restart pagination without a cursor.');
    expect(invalid.body.error.details).toBeUndefined();
    const startedAt = asc.body.data[1].startedAt;
    const window = await v2('GET', `/workflows/${wf}/runs?order=asc&startDate=${startedAt}&endDate=${asc.body.data[3].startedAt}`);
    expect(window.body.data.map((x: { runId: string }) => x.runId)).toEqual(ids.slice(1, 4));
  });

  it('enforces the query rules: strict, no empty or repeated params, bounds, UTC dates, start <= end', async () => {
    const wf = await deploy(t, 'v2-list-bad', echo);
    const q = (s: string) => v2('GET', `/workflows/${wf}/runs?${s}`);
    expectV2Error(await q('limit='), 400, 'BAD_REQUEST', 'limit cannot be empty; omit the parameter instead');
    expectV2Error(await q('limit=2&limit=3'), 400, 'BAD_REQUEST', 'limit was sent 2 times; send it at most once');
    for (const bad of ['limit=0', 'limit=101', 'limit=1.5', 'status=done', 'order=up', 'sortBy=name', 'startDate=2026-01-01', 'startDate=2026-01-01T00:00:00%2B01:00',
      'startDate=2026-02-01T00:00:00Z&endDate=2026-01-01T00:00:00Z']) {
      expectV2Error(await q(bad), 400, 'BAD_REQUEST');
    }
  });
});

describe('v2 cancel', () => {
  const cancel = (wf: string, runId: string) => v2('POST', `/workflows/${wf}/runs/${runId}/cancel`);

  it('a running async run stops at once and ends cancelled (the next block never runs); a queued one never starts', async () => {
    const wf = await deploy(t, 'v2-cancel-async', slow);
    const running = (await v2('POST', `/workflows/${wf}/execute`, { async: true })).body.data.runId;
    await pollRun(wf, running, (s) => s === 'running');
    // The only worker slot is taken: this one waits in the queue.
    const queued = (await v2('POST', `/workflows/${wf}/execute`, { async: true })).body.data.runId;
    expect((await v2('GET', `/workflows/${wf}/runs/${queued}`)).body.data.status).toBe('queued');
    const listed = await v2('GET', `/workflows/${wf}/runs?status=pending`);
    expect(listed.body.data.map((x: { runId: string; status: string }) => [x.runId, x.status])).toEqual([[queued, 'pending']]);
    const q = await cancel(wf, queued);
    expect(q.status).toBe(200);
    expect(q.body.data).toEqual({ success: true, runId: queued, redisAvailable: false, durablyRecorded: true, locallyAborted: false, pausedCancelled: false, reason: 'recorded' });
    const c = await cancel(wf, running);
    expect(c.body.data).toMatchObject({ success: true, runId: running, durablyRecorded: true, locallyAborted: true, reason: 'recorded' });
    const ended = await pollRun(wf, running, terminal);
    expect(ended.status).toBe('cancelled');
    expect(ended.endedAt).not.toBeNull();
    const log = await t.call('GET', `/api/v1/logs/${running}`);
    expect(log.body.data.trace.map((e: { blockId: string }) => e.blockId)).not.toContain('after');
    // The queued run never started, also after the worker slot freed up.
    const q2 = await pollRun(wf, queued, terminal);
    expect(q2).toMatchObject({ status: 'cancelled', cost: null });
    expect((await t.call('GET', `/api/v1/logs/${queued}`)).body.data.trace).toEqual([]);
    expect((await t.call('GET', `/api/jobs/job_${queued}`)).body.status).toBe('cancelled');
    // A terminal run: no effect.
    expect((await cancel(wf, running)).body.data).toMatchObject({ success: true, reason: 'already_cancelled', durablyRecorded: false });
    const done = (await v2('POST', `/workflows/${(await deploy(t, 'v2-cancel-done', echo))}/execute`, { input: { name: 'z' } })).body.data;
    expect((await cancel(done.workflowId, done.runId)).body.data).toMatchObject({ success: false, reason: 'already_completed' });
    expectV2Error(await cancel(wf, 'no-such-run'), 404, 'NOT_FOUND', 'Run not found');
  });

  it('an async run ends failed with error code TIMEOUT after its own timeout (v2 executionTimeoutSeconds, legacy X-Execution-Timeout-Seconds)', async () => {
    const wf = await deploy(t, 'v2-timeout', slow);
    const runId = (await v2('POST', `/workflows/${wf}/execute`, { async: true, executionTimeoutSeconds: 1 })).body.data.runId;
    const ended = await pollRun(wf, runId, terminal);
    expect(ended).toMatchObject({ status: 'failed', error: { code: 'TIMEOUT', message: expect.stringMatching(/timed out/) } });
    const legacy = await t.call('POST', `/api/workflows/${wf}/execute`, {}, { 'x-execution-mode': 'async', 'x-execution-timeout-seconds': '1' });
    expect(legacy.status).toBe(202);
    expect((await pollRun(wf, legacy.body.executionId, terminal)).status).toBe('failed');
    expect((await t.call('POST', `/api/workflows/${wf}/execute`, {}, { 'x-execution-timeout-seconds': '5' })).body.error)
      .toBe('X-Execution-Timeout-Seconds is supported only for async runs');
    expect((await t.call('POST', `/api/workflows/${wf}/execute`, {}, { 'x-execution-mode': 'async', 'x-execution-timeout-seconds': '1.5' })).status).toBe(400);
  });

  it('a running sync run with a known id is cancelled through the endpoint; its request answers cancelled', async () => {
    const wf = await deploy(t, 'v2-cancel-sync', slow);
    const pending = v2('POST', `/workflows/${wf}/execute`, {}, { 'x-run-id': 'sync-cancel-1' });
    await pollRun(wf, 'sync-cancel-1', (s) => s === 'running');
    const c = await cancel(wf, 'sync-cancel-1');
    expect(c.body.data).toMatchObject({ success: true, locallyAborted: true, reason: 'recorded' });
    const r = await pending;
    expect(r.status).toBe(200);
    expect(r.body.data).toMatchObject({ runId: 'sync-cancel-1', status: 'cancelled', error: { code: 'CANCELLED' } });
    expect((await v2('GET', `/workflows/${wf}/runs/sync-cancel-1`)).body.data.status).toBe('cancelled');
  });

  it('a client that disconnects cancels its sync run', async () => {
    const wf = await deploy(t, 'v2-cancel-disconnect', slow);
    const abort = new AbortController();
    const pending = fetch(`${t.url}/api/v2/workflows/${wf}/execute`, {
      method: 'POST', signal: abort.signal, headers: { 'x-api-key': t.apiKey, 'content-type': 'application/json', 'x-run-id': 'gone-1' }, body: '{}',
    }).catch(() => undefined);
    await pollRun(wf, 'gone-1', (s) => s === 'running');
    abort.abort();
    await pending;
    expect((await pollRun(wf, 'gone-1', terminal)).status).toBe('cancelled');
  });

  it('a paused run is cancelled with its pause: no resume is accepted afterwards', async () => {
    const wf = await deploy(t, 'v2-cancel-paused', approval);
    const p = await v2('POST', `/workflows/${wf}/execute`, {});
    expect(p.body.data.status).toBe('paused');
    const runId = p.body.data.runId;
    const c = await cancel(wf, runId);
    expect(c.body.data).toMatchObject({ success: true, pausedCancelled: true, durablyRecorded: true, reason: 'recorded' });
    const run = (await v2('GET', `/workflows/${wf}/runs/${runId}`)).body.data;
    expect(run).toMatchObject({ status: 'cancelled', paused: null });
    expect((await t.call('GET', `/api/resume/${wf}/${runId}`)).body.status).toBe('cancelled');
    expectV2Error(await v2('POST', `/workflows/${wf}/runs/${runId}/resume`, { contextId: 'gate', input: { ok: true } }), 409, 'CONFLICT', 'Paused execution is not resumable');
  });
});

describe('v2 resume', () => {
  it('shows a paused run with paused.contextId; resuming it creates a new run id (sync original: 200 with the result)', async () => {
    const wf = await deploy(t, 'v2-resume-sync', approval);
    const p = await v2('POST', `/workflows/${wf}/execute`, {});
    expect(p.status).toBe(200);
    expect(p.body.data).toMatchObject({ status: 'paused', error: null });
    const runId = p.body.data.runId;
    const run = (await v2('GET', `/workflows/${wf}/runs/${runId}`)).body.data;
    expect(run.status).toBe('paused');
    expect(run.paused).toEqual({
      contextId: 'gate', pausedAt: expect.any(String), resumeAt: null, pauseKind: 'human', blockedOnBlockId: 'gate',
      automaticResumeWaitingReason: null, pausePointCount: 1, resumedCount: 0,
    });
    expect(run.endedAt).toBeNull();
    expectV2Error(await v2('POST', `/workflows/${wf}/runs/${runId}/resume`, { contextId: 'nope', input: { ok: true } }), 404, 'NOT_FOUND', 'Pause point not found for execution');
    expectV2Error(await v2('POST', `/workflows/${wf}/runs/${runId}/resume`, { input: { ok: true } }), 400, 'BAD_REQUEST');
    expectV2Error(await v2('POST', `/workflows/${wf}/runs/${runId}/resume`, { contextId: 'gate', extra: 1 }), 400, 'BAD_REQUEST');
    const r = await v2('POST', `/workflows/${wf}/runs/${runId}/resume`, { contextId: 'gate', input: { ok: true } });
    expect(r.status).toBe(200);
    expect(r.body.data).toMatchObject({ workflowId: wf, status: 'completed', output: { ok: true }, error: null });
    expect(r.body.data.runId).not.toBe(runId);
    expect(r.headers.get('x-run-id')).toBe(r.body.data.runId);
    const resumed = (await v2('GET', `/workflows/${wf}/runs/${r.body.data.runId}?includeOutput=true`)).body.data;
    expect(resumed).toMatchObject({ status: 'completed', trigger: 'resume', output: { ok: true } });
    expect((await v2('GET', `/workflows/${wf}/runs/${runId}`)).body.data.status).toBe('completed');
    expectV2Error(await v2('POST', `/workflows/${wf}/runs/${runId}/resume`, { contextId: 'gate', input: { ok: true } }), 409, 'CONFLICT');
  });

  it('resumes an async paused run with 202 {runId, statusUrl} and a new run that completes', async () => {
    const wf = await deploy(t, 'v2-resume-async', approval);
    const runId = (await v2('POST', `/workflows/${wf}/execute`, { async: true })).body.data.runId;
    const paused = await pollRun(wf, runId, (s) => s === 'paused');
    expect(paused.paused.contextId).toBe('gate');
    // The list agrees with the resource: a paused run has not ended.
    const listed = (await v2('GET', `/workflows/${wf}/runs?status=paused`)).body.data;
    expect(listed).toEqual([expect.objectContaining({ runId, status: 'paused', endedAt: null, durationMs: null })]);
    const r = await v2('POST', `/workflows/${wf}/runs/${runId}/resume`, { contextId: paused.paused.contextId, input: { ok: false } });
    expect(r.status).toBe(202);
    expect(r.body.data.runId).not.toBe(runId);
    expect(r.body.data.statusUrl).toBe(`${t.url}/api/v2/workflows/${wf}/runs/${r.body.data.runId}`);
    const done = await pollRun(wf, r.body.data.runId, terminal, '?includeOutput=1');
    expect(done).toMatchObject({ status: 'completed', output: { ok: false } });
  });

  it('resumes a run that answered as a stream as a job: 202, and the new run completes', async () => {
    const wf = await deploy(t, 'v2-resume-stream', approval);
    const s = await v2('POST', `/workflows/${wf}/execute`, { stream: true });
    expect(s.status).toBe(200);
    expect(s.headers.get('content-type')).toMatch(/text\/event-stream/);
    // A stream names no run (as Sim's): the workflow's list does.
    const listed = (await v2('GET', `/workflows/${wf}/runs?status=paused`)).body.data;
    expect(listed).toHaveLength(1);
    const runId = listed[0].runId as string;
    const r = await v2('POST', `/workflows/${wf}/runs/${runId}/resume`, { contextId: 'gate', input: { ok: true } });
    expect(r.status, r.text).toBe(202);
    expect(r.body.data.runId).not.toBe(runId);
    const done = await pollRun(wf, r.body.data.runId, terminal, '?includeOutput=1');
    expect(done).toMatchObject({ status: 'completed', trigger: 'resume', output: { ok: true } });
  });
});

describe('v2 rate limits', () => {
  it('per-operation buckets: 429 RATE_LIMITED with integer Retry-After and details.retryAfter; polling does not spend execute quota', async () => {
    const s = await startTestServer({
      env: { WEFT_DEFAULT_PLAN: 'free', WEFT_PLAN_LIMITS: JSON.stringify({ free: { apiPerMinute: 1, syncPerMinute: 100 }, pro: { usageLimitUsd: 0.005 }, team: { syncPerMinute: 1 } }) },
    });
    try {
      const wf = await deploy(s, 'v2-rl', echo);
      const exec = () => s.call('POST', `/api/v2/workflows/${wf}/execute`, { input: { name: 'a' } });
      const first = await exec();
      expect(first.status).toBe(200);
      expect(first.headers.get('x-ratelimit-limit')).toBe('2');
      expect(first.headers.get('x-ratelimit-remaining')).toBe('1');
      expect((await exec()).status).toBe(200);
      const refused = await exec();
      expectV2Error(refused, 429, 'RATE_LIMITED', 'API rate limit exceeded');
      expect(refused.headers.get('retry-after')).toMatch(/^\d+$/);
      expect(Number(refused.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
      expect(refused.headers.get('x-ratelimit-remaining')).toBe('0');
      expect(refused.headers.get('x-ratelimit-limit')).toBe('2');
      expect(Date.parse(refused.body.error.details.retryAfter)).toBeGreaterThan(Date.now() - 1000);
      // Reading runs has its own bucket.
      const read = await s.call('GET', `/api/v2/workflows/${wf}/runs/${first.body.data.runId}`);
      expect(read.status).toBe(200);
      expect(read.headers.get('x-ratelimit-remaining')).toBe('1');

      // The execution gates map to v2 codes: usage 402, the sync execution bucket 429 with details.code.
      const executor = async (plan: string) => {
        const ws = await createWorkspace(s.server.ctx.db, `v2-${plan}`, s.userId, plan);
        const key = await createKey(s.server.ctx.db, { workspaceId: ws.id, userId: s.userId, type: 'workspace' });
        const h = { 'x-api-key': key.secret };
        const created = await request(`${s.url}/api/v1/workflows`, 'POST', { workspaceId: ws.id, name: plan, definition: echo }, h);
        await request(`${s.url}/api/v1/workflows/${created.body.data.workflow.id}/deploy`, 'POST', undefined, h);
        return () => request(`${s.url}/api/v2/workflows/${created.body.data.workflow.id}/execute`, 'POST', { input: { name: 'p' } }, h);
      };
      const pro = await executor('pro');
      expect((await pro()).status).toBe(200);
      const usage = await pro();
      expectV2Error(usage, 402, 'USAGE_LIMIT_EXCEEDED', /Usage limit exceeded/);
      expectRateHeaders(usage);
      const team = await executor('team');
      expect((await team()).status).toBe(200);
      expect((await team()).status).toBe(200);
      const throttled = await team();
      expectV2Error(throttled, 429, 'RATE_LIMITED', 'Rate limit exceeded. Please try again later.');
      expect(throttled.body.error.details).toEqual({ code: 'RATE_LIMIT_EXCEEDED' });
      expect(throttled.headers.get('retry-after')).toMatch(/^\d+$/);
      // The rate-limit headers are the request bucket's (execute operation), not the execution bucket's.
      expect(Number(throttled.headers.get('x-ratelimit-remaining'))).toBeGreaterThan(0);
    } finally {
      await s.close();
    }
  });
});

describe('legacy paths', () => {
  it('stream on the legacy execute route (stream: true or X-Stream-Response); selectedOutputs leave a JSON answer whole', async () => {
    const wf = await deploy(t, 'legacy-stream', {
      blocks: [start([{ name: 'name', type: 'string' }]), fn('first', 'return { text: "one " + <start.name>, other: 1 }', 'First')],
      edges: [{ from: 'start', to: 'first' }],
    });
    for (const [body, headers] of [[{ name: 'q', stream: true, selectedOutputs: ['first.text'] }, {}], [{ name: 'q', selectedOutputs: ['first.text'] }, { 'x-stream-response': 'true' }]] as const) {
      const r = await t.call('POST', `/api/workflows/${wf}/execute`, body, headers);
      expect(r.status).toBe(200);
      expect(r.headers.get('content-type')).toMatch(/^text\/event-stream/);
      expect(r.headers.get('x-ratelimit-limit')).toBeNull();
      const frames = r.text.split('\n\n').filter(Boolean).map((l) => JSON.parse(l.slice(6)));
      expect(frames).toEqual([{ blockId: 'first', chunk: 'one q' }, { event: 'final', data: { success: true, output: {} } }, '[DONE]']);
    }
    const json = await t.call('POST', `/api/workflows/${wf}/execute`, { name: 'q', selectedOutputs: ['first.text'] });
    expect(json.body).toMatchObject({ success: true, output: { text: 'one q', other: 1 } });
    const asyncSel = await t.call('POST', `/api/workflows/${wf}/execute`, { name: 'q', selectedOutputs: ['first.text'] }, { 'x-execution-mode': 'async' });
    expect(asyncSel.status).toBe(400);
  });

  it('carries no X-RateLimit-* headers on execute, status, jobs and usage limits', async () => {
    const wf = await deploy(t, 'legacy-headers', echo);
    const responses = [
      await t.call('POST', `/api/workflows/${wf}/execute`, { name: 'a' }),
      await t.call('POST', `/api/workflows/${wf}/execute`, { name: 'a' }, { 'x-execution-mode': 'async' }),
      await t.call('GET', `/api/workflows/${wf}/status`),
      await t.call('GET', '/api/users/me/usage-limits'),
      await t.call('POST', '/api/workflows/00000000-0000-4000-8000-000000000000/execute', {}),
    ];
    responses.push(await t.call('GET', `/api/jobs/${responses[1]?.body.jobId}`));
    for (const r of responses) expect([...r.headers.keys()].filter((h) => h.startsWith('x-ratelimit-'))).toEqual([]);
    expect(responses[2]?.body).toMatchObject({ isDeployed: true, needsRedeployment: false });
  });
});

describe('OpenAPI', () => {
  it('documents both surfaces', async () => {
    const doc = (await request(`${t.url}/api/openapi.json`, 'GET')).body;
    for (const p of ['/api/workflows/{workflowId}/execute', '/api/workflows/{id}/status', '/api/v2/workflows/{id}/execute', '/api/v2/workflows/{id}/runs',
      '/api/v2/workflows/{id}/runs/{runId}', '/api/v2/workflows/{id}/runs/{runId}/cancel', '/api/v2/workflows/{id}/runs/{runId}/resume']) {
      expect(Object.keys(doc.paths)).toContain(p);
    }
  });
});

