// Answers a workflow controls are inert on the service's origin: no cookies, no framing or hop-by-hop
// headers, no redirects, and every API answer is `nosniff` with a sandboxing policy. Links a run hands out
// never follow the Host header of an unauthenticated sender.
import http from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { request, startTestServer, type TestServer } from '../support/harness.js';
import { deploy, start } from '../support/workflows.js';
import { hook, post, webhookWorkflow } from '../webhooks/support.js';

let t: TestServer;
beforeAll(async () => {
  t = await startTestServer({ env: { WEFT_DEFAULT_PLAN: 'enterprise' } });
});
afterAll(async () => {
  await t?.close();
});

const SANDBOX = "default-src 'none'; sandbox";
const respond = (headers: Record<string, unknown>, data: unknown = '<script>fetch("/api/v1/auth/session")</script>') => ({
  id: 'reply', type: 'response', name: 'Reply', config: { status: 200, data, headers },
});
const viaStart = (headers: Record<string, unknown>, fields = [{ name: 'note', type: 'string' }]) => ({
  blocks: [start(fields), respond(headers)],
  edges: [{ from: 'start', to: 'reply' }],
});
const create = (name: string, definition: unknown) => t.call('POST', '/api/v1/workflows', { workspaceId: t.workspaceId, name, definition });

describe('Response block headers at save', () => {
  it.each([
    ['Set-Cookie', 'weft_session=attacker; Path=/'],
    ['set-cookie2', 'a=b'],
    ['Connection', 'close'],
    ['Transfer-Encoding', 'chunked'],
    ['Content-Length', '1'],
    ['Location', 'https://evil.example/'],
    ['Access-Control-Allow-Origin', '*'],
    ['Content-Security-Policy', "default-src *"],
    ['X-Accel-Redirect', '/internal/secrets'],
    ['Proxy-Authenticate', 'Basic'],
  ])('refuses %s with a 400 naming the block and the header', async (name, value) => {
    const r = await create(`refused-${name}`, viaStart({ [name]: value }));
    expect(r.status).toBe(400);
    expect(r.text).toContain('Reply');
    expect(r.text).toContain(name);
  });

  it('refuses a header value holding CR or LF, and a header name that is not a token', async () => {
    const crlf = await create('crlf', viaStart({ 'X-Note': 'a\r\nSet-Cookie: x=1' }));
    expect(crlf.status).toBe(400);
    expect(crlf.text).toContain('X-Note');
    expect(crlf.text).toContain('Reply');
    const badName = await create('bad-name', viaStart({ 'X Note': 'a' }));
    expect(badName.status).toBe(400);
  });

  it('keeps content type, caching and custom X- headers', async () => {
    const r = await create('allowed', viaStart({ 'Content-Type': 'text/plain', 'Cache-Control': 'no-store', 'X-Order-Id': '42' }));
    expect(r.status).toBe(201);
  });
});

describe('answers a workflow controls', () => {
  it('an HTML answer from sync execute is sandboxed, nosniff, and sets no cookie', async () => {
    const wf = await deploy(t, 'html-execute', viaStart({ 'Content-Type': 'text/html', 'X-Order-Id': '42' }));
    const r = await t.call('POST', `/api/workflows/${wf}/execute`, { inputs: {} });
    expect(r.status).toBe(200);
    expect(r.headers.get('content-type')).toContain('text/html');
    expect(r.headers.get('content-security-policy')).toBe(SANDBOX);
    expect(r.headers.get('x-content-type-options')).toBe('nosniff');
    expect(r.headers.get('set-cookie')).toBeNull();
    expect(r.headers.get('x-order-id')).toBe('42');
  });

  it('a webhook in result mode answers the same way, duplicates included', async () => {
    const def = {
      blocks: [hook({ responseMode: 'result', path: 'html-answer' }), respond({ 'Content-Type': 'text/html; charset=utf-8' })],
      edges: [{ from: 'hook', to: 'reply' }],
    };
    const { url } = await webhookWorkflow(t, def);
    for (let i = 0; i < 2; i++) {
      const r = await post(url, { a: 1 }, { 'idempotency-key': 'same-delivery' });
      expect(r.status).toBe(200);
      expect(r.text).toContain('<script>');
      expect(r.headers.get('content-security-policy')).toBe(SANDBOX);
      expect(r.headers.get('x-content-type-options')).toBe('nosniff');
      expect(r.headers.get('set-cookie')).toBeNull();
    }
  });

  it('a header whose reference resolves to a line break fails the run with the header named, not a 500 from the server', async () => {
    const wf = await deploy(t, 'crlf-at-run', viaStart({ 'X-Note': '<start.note>' }));
    const r = await t.call('POST', `/api/workflows/${wf}/execute`, { inputs: { note: 'ok\r\nSet-Cookie: weft_session=planted' } });
    expect(r.status).toBe(500);
    expect(r.body.success).toBe(false);
    expect(r.body.error).toContain('X-Note');
    expect(r.headers.get('set-cookie')).toBeNull();
  });

  it('every API answer is nosniff and sandboxed; the reference page keeps its scripts', async () => {
    const list = await t.call('GET', `/api/v1/workflows?workspaceId=${t.workspaceId}`);
    expect(list.headers.get('x-content-type-options')).toBe('nosniff');
    expect(list.headers.get('content-security-policy')).toBe(SANDBOX);
    const missing = await request(`${t.url}/api/webhooks/trigger/nothing-here`, 'POST', '{}');
    expect(missing.status).toBe(404);
    expect(missing.headers.get('content-security-policy')).toBe(SANDBOX);
    const docs = await request(`${t.url}/api/docs/`, 'GET');
    expect(docs.headers.get('content-security-policy')).not.toBe(SANDBOX);
  });

  it('a percent-encoded path reaches the same routes with the same policy: a page another site sends a browser to stays inert', async () => {
    // `/%61pi/...` is `/api/...` to the router; the policy once went by the raw URL, and a webhook answering HTML
    // there ran its script on the dashboard's origin (a security audit, reproduced in Chromium).
    const def = {
      blocks: [hook({ responseMode: 'result', path: 'encoded-path' }), respond({ 'Content-Type': 'text/html' })],
      edges: [{ from: 'hook', to: 'reply' }],
    };
    await webhookWorkflow(t, def);
    const viaWebhook = await request(`${t.url}/%61pi/webhooks/trigger/encoded-path`, 'POST', { a: 1 });
    expect(viaWebhook.status).toBe(200);
    expect(viaWebhook.text).toContain('<script>');
    expect(viaWebhook.headers.get('content-security-policy')).toBe(SANDBOX);
    const wf = await deploy(t, 'html-encoded', viaStart({ 'Content-Type': 'text/html' }));
    const viaExecute = await request(`${t.url}/%61pi/workflows/${wf}/%65xecute`, 'POST', { inputs: {} }, { 'x-api-key': t.apiKey });
    expect(viaExecute.status).toBe(200);
    expect(viaExecute.headers.get('content-security-policy')).toBe(SANDBOX);
    // Every other answer too, inside /api/ or not; the dashboard's page keeps its own policy.
    for (const path of ['/healthz', '/%61pi/v1/nothing', '/nothing.js']) {
      expect((await request(`${t.url}${path}`, 'GET')).headers.get('content-security-policy'), path).toBe(SANDBOX);
    }
  });
});

/** A POST whose Host header names another site. */
function postWithHost(url: string, host: string, body: unknown): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request(url, { method: 'POST', headers: { host, 'content-type': 'application/json' } }, (res) => {
      let text = '';
      res.on('data', (d: Buffer) => (text += d.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
    });
    req.on('error', reject);
    req.end(JSON.stringify(body));
  });
}

describe('links handed out to unauthenticated senders', () => {
  it('a webhook delivery\'s resume links use the server\'s own base, never the sender\'s Host', async () => {
    const def = {
      blocks: [
        hook({ responseMode: 'result', path: 'approve-links' }),
        { id: 'approval', type: 'human', name: 'Approval', config: { message: 'Approve?', fields: [{ name: 'ok', type: 'boolean' }] } },
      ],
      edges: [{ from: 'hook', to: 'approval' }],
    };
    const { url } = await webhookWorkflow(t, def);
    const r = await postWithHost(url, 'evil.example', { a: 1 });
    expect(r.status).toBe(200);
    expect(r.text).toContain('/resume/');
    expect(r.text).not.toContain('evil.example');
    expect(r.text).toContain(t.url);
  });
});

/** A request whose Host header names `host`, sent to the test server. */
function withHost(url: string, method: string, host: string, headers: Record<string, string> = {}, body?: string): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request(url, { method, headers: { host, 'content-type': 'application/json', ...headers } }, (res) => {
      let text = '';
      res.on('data', (d: Buffer) => (text += d.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

describe('WEFT_PUBLIC_BASE_URL: trigger URLs on an origin of their own', () => {
  let p: TestServer;
  beforeAll(async () => {
    p = await startTestServer({ env: { WEFT_DEFAULT_PLAN: 'enterprise', WEFT_PUBLIC_BASE_URL: 'https://hooks.example.test' } });
  });
  afterAll(async () => {
    await p?.close();
  });

  it('shows trigger URLs on the public origin, which serves triggers and health checks only', async () => {
    const def = { blocks: [hook({ path: 'public-origin', responseMode: 'result' }), respond({ 'X-Seen': 'yes' }, { ok: true })], edges: [{ from: 'hook', to: 'reply' }] };
    const created = await p.call('POST', '/api/v1/workflows', { workspaceId: p.workspaceId, name: 'public', definition: def });
    const id = created.body.data.workflow.id;
    expect((await p.call('POST', `/api/v1/workflows/${id}/deploy`)).status).toBe(200);
    const shown = (await p.call('GET', `/api/v1/workflows/${id}`)).body.data.workflow.webhookUrl;
    expect(shown).toBe('https://hooks.example.test/api/webhooks/trigger/public-origin');

    const trigger = await withHost(`${p.url}/api/webhooks/trigger/public-origin`, 'POST', 'hooks.example.test', {}, '{}');
    expect(trigger.status).toBe(200);
    expect(JSON.parse(trigger.text)).toEqual({ ok: true });
    expect((await withHost(`${p.url}/healthz`, 'GET', 'hooks.example.test')).status).toBe(200);
    // The API, the session routes and the dashboard are not served there, even with a valid key.
    for (const path of [`/api/v1/workflows?workspaceId=${p.workspaceId}`, '/api/v1/auth/session', '/', '/workflows']) {
      expect((await withHost(`${p.url}${path}`, 'GET', 'hooks.example.test', { 'x-api-key': p.apiKey })).status).toBe(404);
    }
    // Decided by the route, not the raw URL: an encoded path reaches the trigger, and nothing else.
    expect((await withHost(`${p.url}/%61pi/webhooks/trigger/public-origin`, 'POST', 'hooks.example.test', {}, '{}')).status).toBe(200);
    expect((await withHost(`${p.url}/%61pi/v1/workflows?workspaceId=${p.workspaceId}`, 'GET', 'hooks.example.test', { 'x-api-key': p.apiKey })).status).toBe(404);
    // The server's own origin serves everything as before.
    expect((await p.call('GET', `/api/v1/workflows?workspaceId=${p.workspaceId}`)).status).toBe(200);
  });
});
