// Taking a member out of a workspace (an audit found only a role change, never a removal: a departing member
// kept reading runs and tables, and minted new personal keys faster than an operator could revoke them).
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addMember, createKey, createUser } from '../support/accounts.js';
import { request, startTestServer, type TestServer } from '../support/harness.js';

let t: TestServer;
beforeAll(async () => {
  t = await startTestServer();
});
afterAll(async () => {
  await t?.close();
});

const as = (key: string) => (method: string, path: string, body?: unknown) => request(t.url + path, method, body, { 'x-api-key': key });

describe('DELETE /api/v1/workspaces/{id}/members/{userId}', () => {
  it('ends the member\'s keys and the workspace keys they created in that workspace; the last admin stays', async () => {
    const db = t.server.ctx.db;
    const admin = as((await createKey(db, { workspaceId: t.workspaceId, userId: t.userId, type: 'personal' })).secret);
    const user = await createUser(db, `leaving-${randomUUID().slice(0, 8)}@example.test`);
    await addMember(db, t.workspaceId, user.id, 'admin');
    const member = as((await createKey(db, { workspaceId: t.workspaceId, userId: user.id, type: 'personal' })).secret);
    const made = await member('POST', '/api/v1/keys', { workspaceId: t.workspaceId, type: 'workspace', name: 'made by the leaver' });
    expect(made.status, made.text).toBe(201);
    const theirWorkspaceKey = as(made.body.data.key);
    const list = `/api/v1/workflows?workspaceId=${t.workspaceId}`;
    expect((await member('GET', list)).status).toBe(200);
    expect((await theirWorkspaceKey('GET', list)).status).toBe(200);

    // Only a workspace admin's personal key (or a session): not a workspace key, not the member being removed's peers below admin.
    expect((await as(t.apiKey)('DELETE', `/api/v1/workspaces/${t.workspaceId}/members/${user.id}`)).status).toBe(403);
    const removed = await admin('DELETE', `/api/v1/workspaces/${t.workspaceId}/members/${user.id}`);
    expect(removed.status, removed.text).toBe(200);
    expect(removed.body).toEqual({ success: true, data: { userId: user.id, removed: true } });

    expect((await member('GET', list)).status).toBe(404);
    expect((await member('POST', '/api/v1/keys', { workspaceId: t.workspaceId, type: 'personal', name: 'another' })).status).toBe(404);
    expect((await theirWorkspaceKey('GET', list)).status).toBe(403);
    expect((await admin('GET', list)).status).toBe(200);

    expect((await admin('DELETE', `/api/v1/workspaces/${t.workspaceId}/members/${user.id}`)).status).toBe(404);
    expect((await admin('DELETE', `/api/v1/workspaces/${t.workspaceId}/members/not-a-uuid`)).status).toBe(404);
    const last = await admin('DELETE', `/api/v1/workspaces/${t.workspaceId}/members/${t.userId}`);
    expect(last.status).toBe(409);
    expect(last.body.error).toMatch(/last admin/);
    expect((await admin('GET', list)).status).toBe(200);

    const audit = await admin('GET', `/api/v1/audit-logs?workspaceId=${t.workspaceId}&limit=100`);
    expect(audit.body.data.some((e: { action: string; resourceId: string }) => e.action === 'member.removed' && e.resourceId === user.id)).toBe(true);
  });

  it('is refused to members below admin, and answers another workspace like a missing one', async () => {
    const db = t.server.ctx.db;
    const user = await createUser(db, `writer-${randomUUID().slice(0, 8)}@example.test`);
    await addMember(db, t.workspaceId, user.id, 'write');
    const writer = as((await createKey(db, { workspaceId: t.workspaceId, userId: user.id, type: 'personal' })).secret);
    expect((await writer('DELETE', `/api/v1/workspaces/${t.workspaceId}/members/${t.userId}`)).status).toBe(403);
    expect((await writer('DELETE', `/api/v1/workspaces/${randomUUID()}/members/${t.userId}`)).status).toBe(404);
  });
});

describe('PUT /api/v1/workspaces/{id}/members/{userId}', () => {
  // An audit: a workspace admin enrolled any user of the instance by id, without their say, and then saw their
  // personal keys in the workspace's key list.
  it('adds a user only for an instance administrator; a workspace admin changes the roles of members', async () => {
    const db = t.server.ctx.db;
    const wsAdmin = await createUser(db, `ws-admin-${randomUUID().slice(0, 8)}@example.test`);
    await addMember(db, t.workspaceId, wsAdmin.id, 'admin');
    const asWsAdmin = as((await createKey(db, { workspaceId: t.workspaceId, userId: wsAdmin.id, type: 'personal' })).secret);
    const outsider = await createUser(db, `outsider-${randomUUID().slice(0, 8)}@example.test`);
    const refused = await asWsAdmin('PUT', `/api/v1/workspaces/${t.workspaceId}/members/${outsider.id}`, { role: 'read' });
    expect(refused.status).toBe(403);
    expect(refused.body.error).toMatch(/Only instance administrators add users/);
    const keys = await asWsAdmin('GET', `/api/v1/keys?workspaceId=${t.workspaceId}`);
    expect(keys.status).toBe(200);
    // A member's role is the workspace admin's to change.
    const member = await createUser(db, `member-${randomUUID().slice(0, 8)}@example.test`);
    await addMember(db, t.workspaceId, member.id, 'read');
    expect((await asWsAdmin('PUT', `/api/v1/workspaces/${t.workspaceId}/members/${member.id}`, { role: 'write' })).status).toBe(200);
    // The bootstrap user is the instance administrator: it may add.
    const instanceAdmin = as((await createKey(db, { workspaceId: t.workspaceId, userId: t.userId, type: 'personal' })).secret);
    const added = await instanceAdmin('PUT', `/api/v1/workspaces/${t.workspaceId}/members/${outsider.id}`, { role: 'read' });
    expect(added.status, added.text).toBe(200);
  });
});
