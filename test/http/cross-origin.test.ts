import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { request, startTestServer, type TestServer } from '../support/harness.js';
import { deploy, fn, start } from '../support/workflows.js';

// Pages on other origins call execute with a key, as they can with the reference service (README, "Using Sim's
// SDKs with Weft"); no other route answers them, and no answer ever allows credentials.

const PAGE = 'https://app.example.com';
const echo = {
  blocks: [start([{ name: 'name', type: 'string' }]), fn('greet', 'return { text: "hi " + <start.name> }', 'Greet')],
  edges: [{ from: 'start', to: 'greet' }],
};

let t: TestServer;
let listed: TestServer;
let off: TestServer;
let workflowId: string;

beforeAll(async () => {
  [t, listed, off] = await Promise.all([
    startTestServer(),
    startTestServer({ env: { WEFT_EXECUTE_CORS_ORIGINS: ` ${PAGE}/ , http://localhost:5173` } }),
    startTestServer({ env: { WEFT_EXECUTE_CORS_ORIGINS: 'off' } }),
  ]);
  workflowId = await deploy(t, 'cors-echo', echo);
});
afterAll(async () => {
  await Promise.all([t?.close(), listed?.close(), off?.close()]);
});

const preflight = (server: TestServer, path: string, origin = PAGE) => request(`${server.url}${path}`, 'OPTIONS', undefined, {
  origin, 'access-control-request-method': 'POST', 'access-control-request-headers': 'content-type,x-api-key,x-execution-mode',
});

describe('execute from another origin (default: any origin)', () => {
  it('answers the preflight without a key: 204 with the methods, the headers execute reads and a day of caching', async () => {
    const r = await preflight(t, `/api/workflows/${workflowId}/execute`);
    expect(r.status).toBe(204);
    expect(r.text).toBe('');
    expect(r.headers.get('access-control-allow-origin')).toBe('*');
    expect(r.headers.get('access-control-allow-methods')).toMatch(/\bPOST\b/);
    const allowed = (r.headers.get('access-control-allow-headers') ?? '').toLowerCase().split(/,\s*/);
    expect(allowed).toEqual(expect.arrayContaining(['content-type', 'x-api-key', 'x-execution-id', 'x-execution-mode', 'x-execution-timeout-seconds']));
    expect(r.headers.get('access-control-max-age')).toBe('86400');
    expect(r.headers.get('access-control-allow-credentials')).toBeNull();
    // An unknown workflow's preflight is the same: a preflight tells nothing about what exists.
    const unknown = await preflight(t, '/api/workflows/nope/execute');
    expect(unknown.status).toBe(204);
    expect(unknown.headers.get('access-control-allow-origin')).toBe('*');
  });

  it('lets the page read the answer of a keyed run, sync, async and streamed, with the ids it may need', async () => {
    const headers = { 'x-api-key': t.apiKey, origin: PAGE };
    const sync = await request(`${t.url}/api/workflows/${workflowId}/execute`, 'POST', { inputs: { name: 'ada' } }, headers);
    expect(sync.status).toBe(200);
    expect(sync.body.output).toEqual({ text: 'hi ada' });
    expect(sync.headers.get('access-control-allow-origin')).toBe('*');
    const exposed = (sync.headers.get('access-control-expose-headers') ?? '').toLowerCase();
    for (const h of ['x-request-id', 'retry-after', 'x-execution-id']) expect(exposed).toContain(h);
    expect(sync.headers.get('access-control-allow-credentials')).toBeNull();

    const queued = await request(`${t.url}/api/workflows/${workflowId}/execute`, 'POST', { inputs: { name: 'bo' }, async: true }, headers);
    expect(queued.status).toBe(202);
    expect(queued.headers.get('access-control-allow-origin')).toBe('*');

    const streamed = await request(`${t.url}/api/workflows/${workflowId}/execute`, 'POST', { inputs: { name: 'cy' }, stream: true }, headers);
    expect(streamed.status).toBe(200);
    expect(streamed.headers.get('content-type')).toMatch(/text\/event-stream/);
    expect(streamed.headers.get('access-control-allow-origin')).toBe('*');
    expect(streamed.text).toContain('hi cy');
  });

  it('lets the page read the errors too: no key, a wrong key, an unknown workflow, a body that is not JSON', async () => {
    const url = `${t.url}/api/workflows/${workflowId}/execute`;
    const cases = [
      await request(url, 'POST', {}, { origin: PAGE }),
      await request(url, 'POST', {}, { origin: PAGE, 'x-api-key': 'sk-wrong-key-000000' }),
      await request(`${t.url}/api/workflows/nope/execute`, 'POST', {}, { origin: PAGE, 'x-api-key': t.apiKey }),
      await request(url, 'POST', '{"inputs":', { origin: PAGE, 'x-api-key': t.apiKey }),
    ];
    expect(cases.map((r) => r.status)).toEqual([401, 401, 404, 400]);
    for (const r of cases) {
      expect(r.headers.get('access-control-allow-origin')).toBe('*');
      expect(typeof r.body.error).toBe('string');
    }
  });

  it('keeps every other route same-origin: no CORS headers on its answers, no preflight answered', async () => {
    const list = await request(`${t.url}/api/v1/workflows?workspaceId=${t.workspaceId}`, 'GET', undefined, { 'x-api-key': t.apiKey, origin: PAGE });
    expect(list.status).toBe(200);
    expect(list.headers.get('access-control-allow-origin')).toBeNull();
    const v1 = await preflight(t, '/api/v1/workflows');
    expect(v1.status).toBe(405);
    expect(v1.headers.get('access-control-allow-origin')).toBeNull();
    const gateway = await preflight(t, '/v1/chat/completions');
    expect(gateway.headers.get('access-control-allow-origin')).toBeNull();
  });

  it('gives a Response block no say: its answer carries the service\'s grant, and a block cannot set one', async () => {
    const refused = await t.call('POST', '/api/v1/workflows', {
      workspaceId: t.workspaceId, name: 'cors-grant',
      definition: { blocks: [start(), { id: 'reply', type: 'response', name: 'Reply', config: { headers: { 'Access-Control-Allow-Credentials': 'true' }, data: {} } }], edges: [{ from: 'start', to: 'reply' }] },
    });
    expect(refused.status).toBe(400);
    expect(refused.text).toMatch(/Access-Control-Allow-Credentials/);

    const id = await deploy(t, 'cors-reply', {
      blocks: [start(), { id: 'reply', type: 'response', name: 'Reply', config: { status: 201, headers: { 'X-Custom': 'yes' }, data: { ok: true } } }],
      edges: [{ from: 'start', to: 'reply' }],
    });
    const r = await request(`${t.url}/api/workflows/${id}/execute`, 'POST', {}, { 'x-api-key': t.apiKey, origin: PAGE });
    expect(r.status).toBe(201);
    expect(r.body).toEqual({ ok: true });
    expect(r.headers.get('access-control-allow-origin')).toBe('*');
  });
});

describe('execute from another origin, as the operator configures it', () => {
  it('with a list: a listed origin is echoed (Vary: Origin), any other gets no grant', async () => {
    const id = await deploy(listed, 'cors-listed', echo);
    const url = `${listed.url}/api/workflows/${id}/execute`;
    const ok = await request(url, 'POST', { inputs: { name: 'ada' } }, { 'x-api-key': listed.apiKey, origin: PAGE });
    expect(ok.status).toBe(200);
    expect(ok.headers.get('access-control-allow-origin')).toBe(PAGE);
    expect(ok.headers.get('vary')).toMatch(/Origin/);
    const local = await preflight(listed, `/api/workflows/${id}/execute`, 'http://localhost:5173');
    expect(local.headers.get('access-control-allow-origin')).toBe('http://localhost:5173');

    // A Response block's own Vary keeps Origin beside it.
    const varied = await deploy(listed, 'cors-vary', {
      blocks: [start(), { id: 'reply', type: 'response', name: 'Reply', config: { headers: { Vary: 'Accept-Language' }, data: { ok: true } } }],
      edges: [{ from: 'start', to: 'reply' }],
    });
    const withVary = await request(`${listed.url}/api/workflows/${varied}/execute`, 'POST', {}, { 'x-api-key': listed.apiKey, origin: PAGE });
    expect(withVary.status).toBe(200);
    expect(withVary.headers.get('access-control-allow-origin')).toBe(PAGE);
    expect(withVary.headers.get('vary')?.split(/,\s*/)).toEqual(['Accept-Language', 'Origin']);

    const other = await request(url, 'POST', { inputs: { name: 'ada' } }, { 'x-api-key': listed.apiKey, origin: 'https://evil.example' });
    expect(other.status).toBe(200);
    expect(other.headers.get('access-control-allow-origin')).toBeNull();
    const otherPreflight = await preflight(listed, `/api/workflows/${id}/execute`, 'https://evil.example');
    expect(otherPreflight.status).toBe(204);
    expect(otherPreflight.headers.get('access-control-allow-origin')).toBeNull();
    expect(otherPreflight.headers.get('access-control-allow-methods')).toBeNull();
  });

  it('off: no grant and no preflight answered (405, as for any method a route lacks); callers without an Origin are not affected', async () => {
    const id = await deploy(off, 'cors-off', echo);
    const r = await request(`${off.url}/api/workflows/${id}/execute`, 'POST', { inputs: { name: 'ada' } }, { 'x-api-key': off.apiKey, origin: PAGE });
    expect(r.status).toBe(200);
    expect(r.headers.get('access-control-allow-origin')).toBeNull();
    const refused = await preflight(off, `/api/workflows/${id}/execute`);
    expect(refused.status).toBe(405);
    expect(refused.headers.get('access-control-allow-origin')).toBeNull();
  });

  it('refuses a setting that is not *, off or origins, naming the part', () => {
    expect(loadConfig({ WEFT_EXECUTE_CORS_ORIGINS: 'https://a.example:8443, HTTP://B.example' }).executeCorsOrigins).toEqual(['https://a.example:8443', 'http://b.example']);
    expect(loadConfig({}).executeCorsOrigins).toBe('*');
    for (const bad of ['https://a.example/app', 'a.example', 'ftp://a.example', 'https://a.example?x=1', '*, https://a.example']) {
      expect(() => loadConfig({ WEFT_EXECUTE_CORS_ORIGINS: bad })).toThrow(/WEFT_EXECUTE_CORS_ORIGINS[\s\S]*not an origin/);
    }
  });
});
