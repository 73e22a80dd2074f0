// The public API with a dashboard session instead of a key: same authorization as the user's personal
// key (roles, foreign workspaces), CSRF tokens on writes, and keys untouched by any of it.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addMember, createKey, createUser, createWorkspace } from '../support/accounts.js';
import { request, startTestServer, type TestServer } from '../support/harness.js';
import { asSession, login, type SignedIn } from './support.js';

let t: TestServer;
let admin: SignedIn;
let reader: SignedIn;
let readerId: string;
let foreignWorkspace: string;
let foreignWorkflow: string;

const definition = { blocks: [{ id: 'start', type: 'start', name: 'Start', config: { inputFormat: [] } }], edges: [] };

beforeAll(async () => {
  t = await startTestServer();
  const { db } = t.server.ctx;
  const { sessions, accounts } = t.server.services;
  await sessions.setPassword(t.userId, 'admin password 123', false);
  admin = await login(t, (await accounts.findUser(t.userId))!.email, 'admin password 123');

  readerId = (await createUser(db, 'reader@example.com')).id;
  await addMember(db, t.workspaceId, readerId, 'read');
  await sessions.setPassword(readerId, 'reader password 123', false);
  reader = await login(t, 'reader@example.com', 'reader password 123');

  // A workspace the reader and the admin are not members of, with a workflow in it.
  const stranger = await createUser(db, 'stranger@example.com');
  foreignWorkspace = (await createWorkspace(db, `foreign-${Date.now()}`, stranger.id, 'enterprise')).id;
  const strangerKey = (await createKey(db, { workspaceId: foreignWorkspace, userId: stranger.id, type: 'workspace' })).secret;
  const wf = await request(`${t.url}/api/v1/workflows`, 'POST', { workspaceId: foreignWorkspace, name: 'theirs', definition }, { 'x-api-key': strangerKey });
  expect(wf.status).toBe(201);
  foreignWorkflow = wf.body.data.workflow.id;
});
afterAll(async () => {
  await t?.close();
});

describe('a session authenticates API calls', () => {
  it('reads with the session cookie alone, with the /api/v1 rate-limit headers', async () => {
    const r = await asSession(t, admin, 'GET', `/api/v1/workflows?workspaceId=${t.workspaceId}`, undefined, false);
    expect(r.status).toBe(200);
    expect(r.headers.get('x-ratelimit-limit')).toMatch(/^\d+$/);
  });

  it('works on routes that take a Bearer key too (the AI gateway), which keep their own 401 envelope', async () => {
    expect((await asSession(t, admin, 'GET', '/api/v1/ai/models', undefined, false)).status).toBe(200);
    const anonymous = await request(`${t.url}/api/v1/ai/models`, 'GET');
    expect(anonymous.status).toBe(401);
    expect(anonymous.body.error.code).toBe('invalid_api_key');
  });

  it('refuses a write without the CSRF token or with a wrong one (403), and takes it with the right one', async () => {
    const body = { workspaceId: t.workspaceId, name: 'csrf-check', definition };
    const missing = await asSession(t, admin, 'POST', '/api/v1/workflows', body, false);
    expect(missing.status).toBe(403);
    expect(missing.body).toEqual({ error: 'CSRF token missing or invalid' });
    const wrong = await asSession(t, admin, 'POST', '/api/v1/workflows', body, `${admin.csrfToken.slice(0, -2)}xx`);
    expect(wrong.status).toBe(403);
    // Another session's token is not this session's.
    expect((await asSession(t, admin, 'POST', '/api/v1/workflows', body, reader.csrfToken)).status).toBe(403);
    const list = await asSession(t, admin, 'GET', `/api/v1/workflows?workspaceId=${t.workspaceId}`);
    expect(JSON.stringify(list.body)).not.toContain('csrf-check');

    const ok = await asSession(t, admin, 'POST', '/api/v1/workflows', body);
    expect(ok.status).toBe(201);
    const id = ok.body.data.workflow.id;
    for (const [method, path, payload] of [
      ['PUT', `/api/v1/workflows/${id}`, { name: 'renamed', definition }],
      ['POST', `/api/v1/workflows/${id}/deploy`, undefined],
      ['DELETE', `/api/v1/workflows/${id}`, undefined],
    ] as const) {
      expect((await asSession(t, admin, method, path, payload, false)).status, `${method} ${path}`).toBe(403);
      expect([200, 201, 204], `${method} ${path}`).toContain((await asSession(t, admin, method, path, payload)).status);
    }
  });

  it('records what a session did in the audit log as the user, through a session', async () => {
    const created = await asSession(t, admin, 'POST', '/api/v1/workflows', { workspaceId: t.workspaceId, name: 'audited', definition });
    expect(created.status).toBe(201);
    const log = await t.call('GET', `/api/v1/audit-logs?workspaceId=${t.workspaceId}`);
    const entry = log.body.data.find((e: { action: string; resourceName: string }) => e.action === 'workflow.created' && e.resourceName === 'audited');
    expect(entry).toMatchObject({ actorId: t.userId, actorType: 'session', actorKeyId: expect.any(String) });
  });

  it('lets the signed-in user make a personal key, which then works without any session', async () => {
    const r = await asSession(t, admin, 'POST', '/api/v1/keys', { workspaceId: t.workspaceId, name: 'mine', type: 'personal' });
    expect(r.status).toBe(201);
    expect(r.body.data.userId).toBe(t.userId);
    const use = await request(`${t.url}/api/v1/workflows?workspaceId=${t.workspaceId}`, 'GET', undefined, { 'x-api-key': r.body.data.key });
    expect(use.status).toBe(200);
  });
});

describe('keys need no CSRF token', () => {
  it('a key-authenticated write succeeds without X-CSRF-Token, even with a session cookie beside it', async () => {
    const plain = await t.call('POST', '/api/v1/workflows', { workspaceId: t.workspaceId, name: 'by-key', definition });
    expect(plain.status).toBe(201);
    const both = await t.call('POST', '/api/v1/workflows', { workspaceId: t.workspaceId, name: 'by-key-2', definition }, { cookie: admin.cookie });
    expect(both.status).toBe(201);
    // The key decides who acts when both are sent: a bad key is refused, never replaced by the cookie.
    const bad = await request(`${t.url}/api/v1/workflows?workspaceId=${t.workspaceId}`, 'GET', undefined, { 'x-api-key': 'sk-weft-nope', cookie: admin.cookie });
    expect(bad.status).toBe(401);
  });
});

describe('the same authorization as the user\'s personal key', () => {
  it('a read member signed in may read but every write is refused by the server (403)', async () => {
    expect((await asSession(t, reader, 'GET', `/api/v1/workflows?workspaceId=${t.workspaceId}`)).status).toBe(200);
    const writes = [
      ['POST', '/api/v1/workflows', { workspaceId: t.workspaceId, name: 'reader-made', definition }],
      ['POST', '/api/v1/keys', { workspaceId: t.workspaceId, name: 'ws', type: 'workspace' }],
      ['PATCH', `/api/v1/workspaces/${t.workspaceId}/settings`, { allowPersonalKeys: false }],
      ['PUT', `/api/v1/workspaces/${t.workspaceId}/members/${readerId}`, { role: 'admin' }],
      ['POST', '/api/v1/tables', { workspaceId: t.workspaceId, name: 'reader_table', schema: { columns: [{ name: 'a', type: 'string' }] } }],
    ] as const;
    for (const [method, path, body] of writes) {
      const r = await asSession(t, reader, method, path, body);
      expect(r.status, `${method} ${path}: ${r.text}`).toBe(403);
    }
    const roles = await asSession(t, reader, 'GET', '/api/v1/auth/session');
    expect(roles.body.workspaces).toEqual([{ id: t.workspaceId, name: 'default', role: 'read' }]);
  });

  it('another workspace and its resources are a 404, exactly like missing ones', async () => {
    for (const s of [admin, reader]) {
      expect((await asSession(t, s, 'GET', `/api/v1/workspaces/${foreignWorkspace}`)).status).toBe(404);
      expect((await asSession(t, s, 'GET', `/api/v1/workflows/${foreignWorkflow}`)).status).toBe(404);
      const del = await asSession(t, s, 'DELETE', `/api/v1/workflows/${foreignWorkflow}`);
      expect(del.status).toBe(404);
    }
  });

  it('is not blocked when the workspace disables personal keys (that setting is about keys)', async () => {
    const personal = (await createKey(t.server.ctx.db, { workspaceId: t.workspaceId, userId: readerId, type: 'personal' })).secret;
    const off = await t.call('PATCH', `/api/v1/workspaces/${t.workspaceId}/settings`, { allowPersonalKeys: false });
    expect(off.status).toBe(200);
    try {
      const byKey = await request(`${t.url}/api/v1/workflows?workspaceId=${t.workspaceId}`, 'GET', undefined, { 'x-api-key': personal });
      expect(byKey.status).toBe(403);
      expect((await asSession(t, reader, 'GET', `/api/v1/workflows?workspaceId=${t.workspaceId}`)).status).toBe(200);
    } finally {
      await t.call('PATCH', `/api/v1/workspaces/${t.workspaceId}/settings`, { allowPersonalKeys: true });
    }
  });
});
