// The trigger URL: availability follows deploys, methods, token auth, references, response modes.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createKey, createWorkspace } from '../support/accounts.js';
import { request, startTestServer, type TestServer } from '../support/harness.js';
import { echo, finishedRuns, fnBlock, hook, post, runsOf, webhookWorkflow } from './support.js';

let t: TestServer;
beforeAll(async () => {
  t = await startTestServer();
});
afterAll(async () => {
  await t?.close();
});

describe('availability', () => {
  it('answers 404 before deploy and after undeploy, keeps its URL across deploys, and shows it while deployed', async () => {
    const { id } = await webhookWorkflow(t, echo({ path: 'orders-1' }), { deploy: false });
    const url = `${t.url}/api/webhooks/trigger/orders-1`;
    const before = await post(url, { a: 1 });
    expect(before.status).toBe(404);
    expect(before.text).toBe('Not Found');
    expect((await t.call('GET', `/api/v1/workflows/${id}`)).body.data.workflow.webhookUrl).toBeUndefined();
    // Unknown paths answer the same.
    expect((await post(`${t.url}/api/webhooks/trigger/nope-${Date.now()}`, {})).status).toBe(404);

    expect((await t.call('POST', `/api/v1/workflows/${id}/deploy`)).status).toBe(200);
    const shown = (await t.call('GET', `/api/v1/workflows/${id}`)).body.data.workflow.webhookUrl;
    expect(shown).toBe(url);
    const list = await t.call('GET', `/api/v1/workflows?workspaceId=${t.workspaceId}&limit=100`);
    expect(list.body.data.find((w: any) => w.id === id).webhookUrl).toBe(url);
    const ok = await post(url, { a: 1 });
    expect(ok.status).toBe(200);
    expect(ok.body).toEqual({ message: 'Webhook processed' });
    const [run] = await finishedRuns(t, id);
    expect(run.trigger).toBe('webhook');
    expect(run.output).toEqual({ a: 1 });

    expect((await t.call('POST', `/api/v1/workflows/${id}/deploy`)).status).toBe(200);
    expect((await t.call('GET', `/api/v1/workflows/${id}`)).body.data.workflow.webhookUrl).toBe(url);
    expect((await t.call('DELETE', `/api/v1/workflows/${id}/deploy`)).status).toBe(200);
    expect((await post(url, { a: 2 })).status).toBe(404);
    const get = await request(url, 'GET');
    expect(get.status).toBe(405);
    expect(get.headers.get('allow')).toBe('POST');
    expect((await t.call('GET', `/api/v1/workflows/${id}`)).body.data.workflow.webhookUrl).toBeUndefined();
  });

  it('generates a path when none is set and keeps it across deploys', async () => {
    const { id, url } = await webhookWorkflow(t, echo());
    expect(url).toMatch(/\/api\/webhooks\/trigger\/wh_[0-9a-f]{32}$/);
    await t.call('DELETE', `/api/v1/workflows/${id}/deploy`);
    await t.call('POST', `/api/v1/workflows/${id}/deploy`);
    expect((await t.call('GET', `/api/v1/workflows/${id}`)).body.data.workflow.webhookUrl).toBe(url);
  });

  it('refuses a deploy whose path another deployed workflow holds (409 naming it)', async () => {
    await webhookWorkflow(t, echo({ path: 'taken-1' }));
    const created = await t.call('POST', '/api/v1/workflows', { workspaceId: t.workspaceId, name: 'second-taken', definition: echo({ path: 'taken-1' }) });
    const dep = await t.call('POST', `/api/v1/workflows/${created.body.data.workflow.id}/deploy`);
    expect(dep.status).toBe(409);
    expect(dep.body.error).toContain('"taken-1"');
    expect((await t.call('GET', `/api/v1/workflows/${created.body.data.workflow.id}`)).body.data.workflow.isDeployed).toBe(false);
  });

  it("keeps a path its workspace's while undeployed: another workspace cannot take it, the same workspace can", async () => {
    const at = `${t.url}/api/webhooks/trigger/kept-1`;
    const { id } = await webhookWorkflow(t, echo({ path: 'kept-1' }));
    expect((await t.call('DELETE', `/api/v1/workflows/${id}/deploy`)).status).toBe(200);
    const other = await createWorkspace(t.server.ctx.db, `wh-other-${Date.now()}`, t.userId);
    const otherKey = (await createKey(t.server.ctx.db, { workspaceId: other.id, userId: t.userId, type: 'workspace' })).secret;
    const asOther = { 'x-api-key': otherKey };
    const foreign = await t.call('POST', '/api/v1/workflows', { workspaceId: other.id, name: 'squatter', definition: echo({ path: 'kept-1' }) }, asOther);
    expect(foreign.status, foreign.text).toBe(201);
    const refused = await t.call('POST', `/api/v1/workflows/${foreign.body.data.workflow.id}/deploy`, undefined, asOther);
    expect(refused.status).toBe(409);
    expect(refused.body.code).toBe('WEBHOOK_PATH_CONFLICT');
    expect((await post(at, { a: 1 })).status).toBe(404);
    // Another workflow of the owning workspace may take the path over, and the first one can then not.
    const { id: second } = await webhookWorkflow(t, echo({ path: 'kept-1' }, 'return { second: true }'));
    expect((await t.call('POST', `/api/v1/workflows/${id}/deploy`)).status).toBe(409);
    expect((await t.call('DELETE', `/api/v1/workflows/${second}`)).status).toBeLessThan(300);
    expect((await t.call('DELETE', `/api/v1/workflows/${id}`)).status).toBeLessThan(300);
    // Once no workflow of the workspace holds it, the path is free for anyone.
    const taken = await t.call('POST', `/api/v1/workflows/${foreign.body.data.workflow.id}/deploy`, undefined, asOther);
    expect(taken.status, taken.text).toBe(200);
    expect((await post(at, { a: 2 })).status).toBe(200);
  });

  it('follows rollbacks and redeploys of a changed path; a deleted workflow frees its path', async () => {
    const { id } = await webhookWorkflow(t, echo({ path: 'rb-1' }));
    const at = (p: string) => `${t.url}/api/webhooks/trigger/${p}`;
    const put = await t.call('PUT', `/api/v1/workflows/${id}`, { definition: { name: 'rb', ...echo({ path: 'rb-2' }) } });
    expect(put.status, put.text).toBe(200);
    // The draft changed, the deployed version did not.
    expect((await post(at('rb-1'), {})).status).toBe(200);
    await t.call('POST', `/api/v1/workflows/${id}/deploy`);
    expect((await post(at('rb-1'), {})).status).toBe(404);
    expect((await post(at('rb-2'), {})).status).toBe(200);
    const rb = await t.call('POST', `/api/v1/workflows/${id}/rollback`, { version: 1 });
    expect(rb.status, rb.text).toBe(200);
    expect((await post(at('rb-1'), {})).status).toBe(200);
    expect((await post(at('rb-2'), {})).status).toBe(404);
    expect((await t.call('DELETE', `/api/v1/workflows/${id}`)).status).toBeLessThan(300);
    expect((await post(at('rb-1'), {})).status).toBe(404);
    await webhookWorkflow(t, echo({ path: 'rb-1' }));
    expect((await post(at('rb-1'), {})).status).toBe(200);
  });

  it('answers 405 with Allow: POST to other methods, known or unknown path', async () => {
    const { url } = await webhookWorkflow(t, echo());
    for (const u of [url, `${t.url}/api/webhooks/trigger/unknown-x`]) {
      for (const m of ['GET', 'PUT', 'PATCH', 'DELETE']) {
        const r = await request(u, m);
        expect(r.status, `${m} ${u}`).toBe(405);
        expect(r.headers.get('allow')).toBe('POST');
      }
    }
  });

  it('refuses a body over 10 MiB with 413 and a malformed JSON body with 400', async () => {
    const { url } = await webhookWorkflow(t, echo());
    const big = await post(url, `{"a":"${'x'.repeat(10 * 1024 * 1024)}"}`);
    expect(big.status).toBe(413);
    expect(big.text).toBe('Request body too large');
    expect(big.headers.get('content-type')).toMatch(/^text\/plain/);
    expect((await post(url, '{nope')).status).toBe(400);
    // A multipart body without its boundary, or cut off mid-part, is refused the same way, with no run.
    expect((await post(url, '--x\r\nContent-Disposition: form-data; name="a"\r\n\r\n1', { 'content-type': 'multipart/form-data' })).status).toBe(400);
    expect((await post(url, '--x\r\nContent-Disposition: form-data; name="a"\r\n\r\n1', { 'content-type': 'multipart/form-data; boundary=x' })).status).toBe(400);
  });

  it('refuses, with no run, a JSON body too wide to parse at once (413) and text the database cannot store (400)', async () => {
    const { id, url } = await webhookWorkflow(t, echo());
    const wide = await post(url, `{${Array.from({ length: 100_001 }, (_, i) => `"k${i}":0`).join(',')}}`);
    expect(wide.status).toBe(413);
    expect(wide.text).toMatch(/members/);
    expect((await post(url, String.raw`{"a":"\u0000"}`)).status).toBe(400);
    expect((await post(url, String.raw`{"a":"\ud800"}`)).status).toBe(400);
    expect((await post(`${url}?q=%00`, { a: 1 })).status).toBe(400);
    const form = await request(url, 'POST', 'a=1&b=%00', { 'content-type': 'application/x-www-form-urlencoded' });
    expect(form.status).toBe(400);
    expect(await runsOf(t, id)).toHaveLength(0);
  });
});

describe('token auth', () => {
  it('accepts the token as a Bearer token, or only in the configured header when one is set; otherwise 401 and no run', async () => {
    const { id, url } = await webhookWorkflow(t, echo({ requireAuth: true, token: 's3cret-token', tokenHeader: 'X-Hook-Token' }));
    expect((await post(url, { a: 1 })).status).toBe(401);
    expect((await post(url, { a: 1 }, { authorization: 'Bearer wrong' })).status).toBe(401);
    expect((await post(url, { a: 1 }, { 'x-hook-token': 's3cret-tokem' })).status).toBe(401);
    // With a token header configured, that header alone counts (as in the reference).
    expect((await post(url, { a: 1 }, { authorization: 'Bearer s3cret-token' })).status).toBe(401);
    expect(await runsOf(t, id)).toHaveLength(0);
    expect((await t.server.ctx.db.query('SELECT 1 FROM webhook_deliveries WHERE workflow_id = $1', [id]))).toHaveLength(0);
    expect((await post(url, { a: 2 }, { 'x-hook-token': 's3cret-token' })).status).toBe(200);
    const bearer = await webhookWorkflow(t, echo({ requireAuth: true, token: 's3cret-token' }));
    expect((await post(bearer.url, { a: 1 }, { authorization: 'bearer s3cret-token' })).status).toBe(200);
    expect(await finishedRuns(t, id, 1)).toHaveLength(1);
    expect(await finishedRuns(t, bearer.id, 1)).toHaveLength(1);
  });
});

describe('references', () => {
  it('reads body fields, headers (credentials withheld), query and event/id/data', async () => {
    const code = 'return { name: <webhook.name>, q: <webhook.query>, ua: <webhook.headers>["x-custom"], auth: <webhook.headers>.authorization ?? null, event: <webhook.event>, id: <webhook.id>, data: <webhook.data> }';
    const { id, url } = await webhookWorkflow(t, echo({ requireAuth: true, token: 'tok-ref' }, code));
    const r = await post(`${url}?x=1&y=two`, { name: 'Ada', event: 'order.created', id: 'evt_9', data: { n: 1 } }, { authorization: 'Bearer tok-ref', 'x-custom': 'hello' });
    expect(r.status).toBe(200);
    const [run] = await finishedRuns(t, id);
    expect(run.output).toEqual({ name: 'Ada', q: { x: '1', y: 'two' }, ua: 'hello', auth: null, event: 'order.created', id: 'evt_9', data: { n: 1 } });
  });

  it('parses form-encoded bodies (a payload field holding JSON too) and coerces declared fields', async () => {
    const { id, url } = await webhookWorkflow(t, echo({ inputFormat: [{ name: 'n', type: 'number', required: true }] }, 'return <webhook.n> + 1'));
    const r = await request(url, 'POST', 'n=41&other=x', { 'content-type': 'application/x-www-form-urlencoded' });
    expect(r.status).toBe(200);
    expect((await finishedRuns(t, id))[0].output).toBe(42);
  });

  it('a workflow with start and webhook: execute enters at start, a delivery at the webhook', async () => {
    const def = {
      blocks: [{ id: 'start', type: 'start', name: 'Start', config: {} }, hook(), fnBlock('a', 'return "start:" + <start.x>'), fnBlock('b', 'return "hook:" + <webhook.x>')],
      edges: [{ from: 'start', to: 'a' }, { from: 'hook', to: 'b' }],
    };
    const { id, url } = await webhookWorkflow(t, def);
    const ex = await t.call('POST', `/api/workflows/${id}/execute`, { x: 1 });
    expect(ex.body.output).toBe('start:1');
    expect((await post(url, { x: 2 })).status).toBe(200);
    const runs = await finishedRuns(t, id, 2);
    expect(runs.map((r) => r.output).sort()).toEqual(['hook:2', 'start:1']);
  });
});

describe('logs', () => {
  it('masks the token and signing secret in the run trace; a missing required field is a 400 in result mode', async () => {
    const def = echo({ requireAuth: true, token: 'tok-secret-1', provider: 'generic', secret: 'sig-secret-1', responseMode: 'result', inputFormat: [{ name: 'a', type: 'number', required: true }] });
    const { id, url } = await webhookWorkflow(t, def);
    expect((await post(url, { a: 1 }, { authorization: 'Bearer tok-secret-1' })).status).toBe(200);
    const bad = await post(url, { b: 1 }, { authorization: 'Bearer tok-secret-1' });
    expect(bad.status).toBe(400);
    expect(bad.body.error).toMatch(/Missing required input field "a"/);
    const traces = await t.server.ctx.db.query<{ trace: unknown }>('SELECT trace FROM executions WHERE workflow_id = $1', [id]);
    const text = JSON.stringify(traces);
    expect(text).not.toContain('tok-secret-1');
    expect(text).not.toContain('sig-secret-1');
    expect(text).toContain('[masked]');
  });
});

describe('response modes', () => {
  it('custom: the configured status and body for every accepted delivery', async () => {
    const { url } = await webhookWorkflow(t, echo({ responseMode: 'custom', responseStatus: 202, responseBody: '{"ok":true}' }));
    const r = await post(url, { a: 1 });
    expect(r.status).toBe(202);
    expect(r.body).toEqual({ ok: true });
    const { url: url2 } = await webhookWorkflow(t, echo({ responseMode: 'custom', responseStatus: 201, responseBody: 'thanks' }));
    const r2 = await post(url2, { a: 1 });
    expect(r2.status).toBe(201);
    expect(r2.text).toBe('thanks');
  });

  it('result: answers the run output like a sync execute, and a Response block as it sets it', async () => {
    const { url } = await webhookWorkflow(t, echo({ responseMode: 'result' }, 'return { doubled: <webhook.a> * 2 }'));
    const r = await post(url, { a: 21 });
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ success: true, output: { doubled: 42 } });
    // The sender holds no key: the workspace's usage and plan are not in its answer.
    expect(r.body).not.toHaveProperty('limits');
    const def = {
      blocks: [hook({ responseMode: 'result' }), { id: 'resp', type: 'response', name: 'Resp', config: { status: 201, data: { got: '<webhook.a>' } } }],
      edges: [{ from: 'hook', to: 'resp' }],
    };
    const { url: url2 } = await webhookWorkflow(t, def);
    const r2 = await post(url2, { a: 'x' });
    expect(r2.status).toBe(201);
    expect(r2.body).toEqual({ got: 'x' });
  });
});
