// Serving the dashboard's build at / from WEFT_WEB_DIST: a fake build in a temporary folder, so these
// tests do not depend on web/ being built.
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { request, startTestServer, type TestServer } from '../support/harness.js';
import { runTempDir } from '../support/temp-dirs.js';

let t: TestServer;
let dist: string;
const INDEX = '<!doctype html><html><head><script type="module" src="/assets/index-Ab12Cd34.js"></script></head><body><div id="root"></div></body></html>';
const SCRIPT = 'console.log("the app");\n';

beforeAll(async () => {
  dist = runTempDir('dist-');
  fs.mkdirSync(path.join(dist, 'assets'));
  fs.writeFileSync(path.join(dist, 'index.html'), INDEX);
  fs.writeFileSync(path.join(dist, 'assets/index-Ab12Cd34.js'), SCRIPT);
  fs.writeFileSync(path.join(dist, 'assets/index-Ef56Gh78.css'), 'body{margin:0}');
  fs.writeFileSync(path.join(dist, 'favicon.svg'), '<svg xmlns="http://www.w3.org/2000/svg"/>');
  t = await startTestServer({ env: { WEFT_WEB_DIST: dist } });
});
afterAll(async () => {
  await t?.close();
  fs.rmSync(dist, { recursive: true, force: true });
});

const html = { accept: 'text/html,application/xhtml+xml,*/*;q=0.8' };
const get = (p: string, headers: Record<string, string> = html) => request(`${t.url}${p}`, 'GET', undefined, headers);

function expectIndex(r: Awaited<ReturnType<typeof get>>): void {
  expect(r.status).toBe(200);
  expect(r.text).toBe(INDEX);
  expect(r.headers.get('content-type')).toMatch(/^text\/html/);
  expect(r.headers.get('cache-control')).toBe('no-cache');
  expect(r.headers.get('content-security-policy')).toMatch(/frame-ancestors 'none'/);
  expect(r.headers.get('content-security-policy')).toMatch(/script-src 'self'(;|$)/);
  expect(r.headers.get('x-frame-options')).toBe('DENY');
}

describe('the built app', () => {
  it('answers a browser at / with index.html, revalidated on every load', async () => {
    const r = await get('/');
    expectIndex(r);
    expect(r.headers.get('vary')).toMatch(/accept/i);
  });

  it('keeps answering programs at / with the landing JSON', async () => {
    for (const headers of [{ accept: 'application/json' }, {}] as Record<string, string>[]) {
      const r = await get('/', headers);
      expect(r.status).toBe(200);
      expect(r.headers.get('content-type')).toMatch(/^application\/json/);
      expect(r.body.links.apiReference).toBe('/api/docs');
      // Like the start banner: where the dashboard is, how to sign in, what to do about a lost password.
      expect(r.body.links.dashboard).toBe('/');
      expect(r.body.signIn).toMatch(/admin email .* one-time password printed at first start/);
      expect(r.body.lostPassword).toContain('npx weft users reset-password --email <email>');
    }
  });

  it('answers every page path of the app with index.html (deep links)', async () => {
    for (const p of ['/workflows', '/workflows/3f1c7a52-0000-4000-8000-000000000000', '/runs/abc', '/settings/api-keys', '/sign-in?next=%2Fruns']) {
      expectIndex(await get(p));
    }
    const head = await request(`${t.url}/approvals`, 'HEAD', undefined, html);
    expect(head.status).toBe(200);
    expect(head.headers.get('content-type')).toMatch(/^text\/html/);
  });

  it('serves hashed assets with a year-long immutable Cache-Control, ETag and 304', async () => {
    const r = await get('/assets/index-Ab12Cd34.js', {});
    expect(r.status).toBe(200);
    expect(r.text).toBe(SCRIPT);
    expect(r.headers.get('content-type')).toMatch(/javascript/);
    expect(r.headers.get('cache-control')).toBe('public, max-age=31536000, immutable');
    const etag = r.headers.get('etag');
    expect(etag).toBeTruthy();
    // (fetch would add Cache-Control: no-cache to a conditional request; a browser revalidating sends max-age=0.)
    expect((await get('/assets/index-Ab12Cd34.js', { 'if-none-match': etag!, 'cache-control': 'max-age=0' })).status).toBe(304);
    expect((await get('/assets/index-Ef56Gh78.css', {})).headers.get('content-type')).toMatch(/^text\/css/);
  });

  it('serves other files of the build without long caching', async () => {
    const r = await get('/favicon.svg', {});
    expect(r.status).toBe(200);
    expect(r.headers.get('content-type')).toMatch(/^image\/svg\+xml/);
    expect(r.headers.get('cache-control')).toBe('no-cache');
  });

  it('answers a missing file with 404, never with index.html', async () => {
    for (const p of ['/assets/missing.js', '/assets/index-Ab12Cd34.js.map', '/favicon.ico', '/workflows/x/logo.png']) {
      const r = await get(p);
      expect(r.status, p).toBe(404);
      expect(r.text, p).not.toContain('<div id="root">');
      expect(r.body.error, p).toMatch(/not found/);
    }
  });

  it('never serves a file outside the build', async () => {
    const outside = path.join(path.dirname(dist), `${path.basename(dist)}-outside.txt`);
    fs.writeFileSync(outside, 'CONTENT-OUTSIDE-THE-BUILD');
    for (const p of ['/assets/..%2f..%2fpackage.json', '/assets/%2e%2e/%2e%2e/package.json', `/..%2f${path.basename(outside)}`, `/assets/..%2f..%2f${path.basename(outside)}`, '/assets/..%5c..%5cpackage.json']) {
      const r = await get(p, {});
      expect(r.text, p).not.toContain('CONTENT-OUTSIDE-THE-BUILD');
      expect(r.text, p).not.toContain('"name": "weft"');
      expect([400, 403, 404], p).toContain(r.status);
    }
    fs.rmSync(outside);
  });

  it('leaves unknown /api paths a JSON 404 and other methods on page paths a 404', async () => {
    const api = await get('/api/nope');
    expect(api.status).toBe(404);
    expect(api.headers.get('content-type')).toMatch(/^application\/json/);
    expect(api.body).toEqual({ error: 'Route GET /api/nope not found' });
    expect((await get('/api/v1/nope')).body).toEqual({ error: 'Route GET /api/v1/nope not found' });
    expect((await get('/api/v2/nope')).body).toEqual({ error: { code: 'NOT_FOUND', message: 'Not found' } });
    // A GET on a path that only takes POST is the API's answer (405 with Allow), not the app's page.
    const wrongMethod = await get('/api/v1/auth/logout');
    expect(wrongMethod.status).toBe(405);
    expect(wrongMethod.headers.get('allow')).toBe('POST');
    expect(wrongMethod.headers.get('content-type')).toMatch(/^application\/json/);
    const post = await request(`${t.url}/workflows`, 'POST', { a: 1 });
    expect(post.status).toBe(404);
    expect(post.body.error).toMatch(/not found/);
  });

  it('leaves the other routes alone: health, the API reference, the API itself', async () => {
    expect((await get('/healthz', {})).body).toEqual({ status: 'ok' });
    const docs = await get('/api/docs');
    expect(docs.status).toBe(200);
    expect(docs.text).not.toBe(INDEX);
    expect((await get('/api/openapi.json', {})).body.openapi).toBe('3.1.0');
    expect((await t.call('GET', `/api/v1/workflows?workspaceId=${t.workspaceId}`)).status).toBe(200);
    expect((await get(`/api/v1/workflows?workspaceId=${t.workspaceId}`, {})).status).toBe(401);
  });
});

describe('without a build', () => {
  let bare: TestServer;
  beforeAll(async () => {
    bare = await startTestServer({ env: { WEFT_WEB_DIST: path.join(dist, 'not-built') } });
  });
  afterAll(async () => {
    await bare?.close();
  });

  it('answers a browser at / with the small HTML page and has no fallback for page paths', async () => {
    const r = await request(`${bare.url}/`, 'GET', undefined, html);
    expect(r.status).toBe(200);
    expect(r.text).toContain('href="/api/docs"');
    expect(r.text).toContain('npm run build');
    const deep = await request(`${bare.url}/workflows/abc`, 'GET', undefined, html);
    expect(deep.status).toBe(404);
  });
});
