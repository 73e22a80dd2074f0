import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { request, startTestServer, type TestServer } from '../support/harness.js';

let t: TestServer;
beforeAll(async () => {
  t = await startTestServer();
});
afterAll(async () => {
  await t?.close();
});

describe('authentication', () => {
  it('rejects a missing key with 401 and the documented body', async () => {
    const r = await request(`${t.url}/api/v1/keys?workspaceId=${t.workspaceId}`, 'GET');
    expect(r.status).toBe(401);
    expect(r.body).toEqual({ error: 'API key required' });
    expect(r.headers.get('x-request-id')).toBeTruthy();
  });

  it('rejects an unknown key with 401', async () => {
    const r = await request(`${t.url}/api/v1/keys?workspaceId=${t.workspaceId}`, 'GET', undefined, { 'x-api-key': 'sk-weft-unknownunknownunknownunknown00' });
    expect(r.status).toBe(401);
    expect(r.body).toEqual({ error: 'Invalid API key' });
  });

  it('accepts the workspace key and lists keys without secrets', async () => {
    const r = await t.call('GET', `/api/v1/keys?workspaceId=${t.workspaceId}`);
    expect(r.status).toBe(200);
    expect(r.body.success).toBe(true);
    expect(r.body.data.keys.length).toBeGreaterThan(0);
    for (const k of r.body.data.keys) {
      expect(k.displayKey).toMatch(/^sk-weft-\.\.\.[A-Za-z0-9]{4}$/);
      expect(JSON.stringify(k)).not.toContain(t.apiKey);
    }
  });

  it('creates a key shown once, which then authenticates, and revokes it', async () => {
    const created = await t.call('POST', '/api/v1/keys', { workspaceId: t.workspaceId, name: 'ci', type: 'workspace' });
    expect(created.status).toBe(201);
    const secret: string = created.body.data.key;
    expect(secret).toMatch(/^sk-weft-[0-9A-Za-z]{32}$/);
    const ok = await request(`${t.url}/api/v1/keys?workspaceId=${t.workspaceId}`, 'GET', undefined, { 'x-api-key': secret });
    expect(ok.status).toBe(200);
    expect(JSON.stringify(ok.body)).not.toContain(secret);

    const del = await t.call('DELETE', `/api/v1/keys/${created.body.data.id}`);
    expect(del.status).toBe(200);
    const after = await request(`${t.url}/api/v1/keys?workspaceId=${t.workspaceId}`, 'GET', undefined, { 'x-api-key': secret });
    expect(after.status).toBe(401);
    const again = await t.call('DELETE', `/api/v1/keys/${created.body.data.id}`);
    expect(again.status).toBe(404);
  });

  it('stores keys hashed: the secret never appears in the database', async () => {
    const created = await t.call('POST', '/api/v1/keys', { workspaceId: t.workspaceId, name: 'hash-check', type: 'workspace' });
    const secret: string = created.body.data.key;
    const rows = await t.server.ctx.db.query<Record<string, unknown>>('SELECT * FROM api_keys WHERE id = $1', [created.body.data.id]);
    // The stored form is the SHA-256 of the secret (what a lookup recomputes), and no column of the
    // row holds the secret's random part or any 8-character piece of it (only its last four are shown).
    expect(rows[0].key_hash).toBe(createHash('sha256').update(secret, 'utf8').digest('hex'));
    expect(rows[0].display_suffix).toBe(`sk-weft-...${secret.slice(-4)}`);
    const row = JSON.stringify(rows[0]);
    const random = secret.slice('sk-weft-'.length);
    for (let i = 0; i + 8 <= random.length; i++) expect(row).not.toContain(random.slice(i, i + 8));
  });

  it('refuses a workspace key on another workspace with 403 and a personal key where disabled', async () => {
    const { createWorkspace, createKey, addMember } = await import('../support/accounts.js');
    const other = await createWorkspace(t.server.ctx.db, `other-${Date.now()}`, t.userId, 'free');
    const r = await t.call('GET', `/api/v1/keys?workspaceId=${other.id}`);
    expect(r.status).toBe(403);
    expect(r.body).toEqual({ error: 'API key is not authorized for this workspace' });

    const personal = await createKey(t.server.ctx.db, { workspaceId: other.id, userId: t.userId, type: 'personal' });
    await addMember(t.server.ctx.db, t.workspaceId, t.userId, 'admin');
    const usePersonal = () => request(`${t.url}/api/v1/keys?workspaceId=${t.workspaceId}`, 'GET', undefined, { 'x-api-key': personal.secret });
    expect((await usePersonal()).status).toBe(200);
    const off = await t.call('PATCH', `/api/v1/workspaces/${t.workspaceId}/settings`, { allowPersonalKeys: false });
    expect(off.status).toBe(200);
    expect(off.body.data.workspace.allowPersonalKeys).toBe(false);
    const denied = await usePersonal();
    expect(denied.status).toBe(403);
    expect(denied.body).toEqual({ error: 'Personal API keys are not allowed for this workspace' });
    await t.call('PATCH', `/api/v1/workspaces/${t.workspaceId}/settings`, { allowPersonalKeys: true });
  });

  it('a non-admin member cannot manage keys', async () => {
    const { createKey, addMember } = await import('../support/accounts.js');
    const { insertUser } = await import('../../src/accounts/store.js');
    const u = await insertUser(t.server.ctx.db, { id: crypto.randomUUID(), email: `r${Date.now()}@x`, name: 'Reader', isAdmin: false, plan: 'free' });
    await addMember(t.server.ctx.db, t.workspaceId, u.id, 'read');
    const k = await createKey(t.server.ctx.db, { workspaceId: t.workspaceId, userId: u.id, type: 'personal' });
    const r = await request(`${t.url}/api/v1/keys?workspaceId=${t.workspaceId}`, 'GET', undefined, { 'x-api-key': k.secret });
    expect(r.status).toBe(403);
    expect(r.body).toEqual({ error: 'Access denied' });
  });
});
