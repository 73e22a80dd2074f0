// The HTTP edge: health, malformed and oversized bodies, unknown routes, request ids, the API reference.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { request, startTestServer, type TestServer } from '../support/harness.js';

let t: TestServer;
beforeAll(async () => {
  t = await startTestServer();
});
afterAll(async () => {
  await t?.close();
});

describe('HTTP base', () => {
  it('answers health and readiness', async () => {
    expect((await request(`${t.url}/healthz`, 'GET')).body).toEqual({ status: 'ok' });
    const ready = await request(`${t.url}/readyz`, 'GET');
    expect(ready.status).toBe(200);
    expect(ready.body.status).toBe('ready');
  });

  it('answers malformed JSON with 400 and writes nothing', async () => {
    const before = await t.server.ctx.db.query<{ n: number }>('SELECT count(*)::int AS n FROM api_keys');
    const r = await t.call('POST', '/api/v1/keys', '{"workspaceId": ');
    expect(r.status).toBe(400);
    expect(r.body).toEqual({ error: 'Request body must be valid JSON' });
    const after = await t.server.ctx.db.query<{ n: number }>('SELECT count(*)::int AS n FROM api_keys');
    expect(after[0].n).toBe(before[0].n);
  });

  it('answers wrong types with 400 and details', async () => {
    const r = await t.call('POST', '/api/v1/keys', { workspaceId: t.workspaceId, name: 42, type: 'workspace' });
    expect(r.status).toBe(400);
    expect(typeof r.body.error).toBe('string');
    expect(Array.isArray(r.body.details)).toBe(true);
    expect(r.body.details[0].path).toEqual(['name']);
  });

  it('answers an oversized body with 413', async () => {
    const big = JSON.stringify({ workspaceId: t.workspaceId, name: 'x'.repeat(11 * 1024 * 1024) });
    const r = await t.call('POST', '/api/v1/keys', big);
    expect(r.status).toBe(413);
    expect(r.body.error).toMatch(/exceeds/);
  });

  it('answers an unknown route with JSON 404', async () => {
    const r = await t.call('GET', '/api/v1/nope');
    expect(r.status).toBe(404);
    expect(typeof r.body.error).toBe('string');
  });

  it('echoes a safe client request id', async () => {
    const r = await request(`${t.url}/healthz`, 'GET', undefined, { 'x-request-id': 'abc-123' });
    expect(r.headers.get('x-request-id')).toBe('abc-123');
  });

  it('serves the OpenAPI document and the API reference', async () => {
    const doc = await request(`${t.url}/api/openapi.json`, 'GET');
    expect(doc.status).toBe(200);
    expect(doc.body.paths['/api/v1/keys'].post).toBeDefined();
    const docs = await request(`${t.url}/api/docs/`, 'GET');
    expect(docs.status).toBe(200);
    expect(docs.text).toMatch(/swagger/i);
  });
});
