// The audit log of administrative actions.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addMember, createKey, createUser, createWorkspace } from '../support/accounts.js';
import { startTestServer, type TestServer } from '../support/harness.js';

let t: TestServer;
beforeAll(async () => {
  t = await startTestServer();
});
afterAll(async () => {
  await t?.close();
});

describe('audit log', () => {
  it('records key creation and revocation with cursor pagination', async () => {
    for (let i = 0; i < 3; i++) await t.call('POST', '/api/v1/keys', { workspaceId: t.workspaceId, name: `audit-${i}`, type: 'workspace' });
    const first = await t.call('GET', `/api/v1/audit-logs?workspaceId=${t.workspaceId}&limit=2`);
    expect(first.status).toBe(200);
    expect(first.body.data).toHaveLength(2);
    expect(first.body.data[0].action).toBe('api_key.created');
    expect(first.body.data[0].resourceName).toBe('audit-2');
    expect(first.body.nextCursor).toBeTruthy();
    const seen = new Set(first.body.data.map((e: { id: string }) => e.id));
    let cursor = first.body.nextCursor;
    let pages = 1;
    while (cursor) {
      const next = await t.call('GET', `/api/v1/audit-logs?workspaceId=${t.workspaceId}&limit=2&cursor=${cursor}`);
      for (const e of next.body.data) {
        expect(seen.has(e.id)).toBe(false);
        seen.add(e.id);
      }
      cursor = next.body.nextCursor;
      pages++;
    }
    expect(pages).toBeGreaterThan(1);
    const bad = await t.call('GET', `/api/v1/audit-logs?workspaceId=${t.workspaceId}&cursor=garbage`);
    expect(bad.status).toBe(400);
  });

  it("filters as the reference's filters do, names the actor, and carries the caller's limits", async () => {
    const made = await t.call('POST', '/api/v1/keys', { workspaceId: t.workspaceId, name: 'audit-filter', type: 'workspace' });
    expect(made.status, made.text).toBe(201);
    const keyId: string = made.body.data.id;
    expect((await t.call('DELETE', `/api/v1/keys/${keyId}`)).status).toBe(200);
    const wf = await t.call('POST', '/api/v1/workflows', {
      workspaceId: t.workspaceId, name: 'audit-filter-wf', definition: { blocks: [{ id: 'start', type: 'start', name: 'Start', config: {} }], edges: [] },
    });
    expect(wf.status).toBe(201);
    const list = async (query: string) => {
      const r = await t.call('GET', `/api/v1/audit-logs?workspaceId=${t.workspaceId}&${query}`);
      expect(r.status, r.text).toBe(200);
      return r.body;
    };
    const revoked = await list('action=api_key.revoked');
    expect(revoked.data.map((e: { resourceId: string }) => e.resourceId)).toEqual([keyId]);
    // The test's key is a workspace key: it acts as the workspace, not as a user.
    expect(revoked.data[0]).toMatchObject({ actorType: 'workspace_key', actorId: null, actorName: null, description: expect.stringContaining('api_key.revoked') });
    expect(revoked.limits.usage).toBeDefined();
    const byId = await list(`resourceId=${keyId}`);
    expect(byId.data.map((e: { action: string }) => e.action)).toEqual(['api_key.revoked', 'api_key.created']);
    const types = await list('resourceType=workflow,secret');
    expect(types.data.length).toBeGreaterThan(0);
    expect(types.data.every((e: { resourceType: string }) => e.resourceType === 'workflow' || e.resourceType === 'secret')).toBe(true);
    expect((await list('action=workflow.created,workflow.deleted')).data.map((e: { resourceName: string }) => e.resourceName)).toContain('audit-filter-wf');
    expect((await list('actorId=00000000-0000-4000-8000-000000000000')).data).toEqual([]);
    const tomorrow = new Date(Date.now() + 86_400_000).toISOString().slice(0, 10);
    expect((await list(`startDate=${tomorrow}`)).data).toEqual([]);
    expect((await list(`endDate=${tomorrow}&resourceId=${keyId}`)).data).toHaveLength(2);
    const badDate = await t.call('GET', `/api/v1/audit-logs?workspaceId=${t.workspaceId}&startDate=soon`);
    expect(badDate.status).toBe(400);
  });

  it("hides a departed member's actions unless includeDeparted; GET /audit-logs/{id} reads one entry", async () => {
    const db = t.server.ctx.db;
    const leaver = await createUser(db, 'audit-leaver@example.com', { name: 'Lea Ver' });
    await addMember(db, t.workspaceId, leaver.id, 'admin');
    const leaverKey = (await createKey(db, { workspaceId: t.workspaceId, userId: leaver.id, type: 'personal' })).secret;
    const made = await t.call('POST', '/api/v1/keys', { workspaceId: t.workspaceId, name: 'made-by-leaver', type: 'workspace' }, { 'x-api-key': leaverKey });
    expect(made.status, made.text).toBe(201);
    const mine = await t.call('GET', `/api/v1/audit-logs?workspaceId=${t.workspaceId}&actorId=${leaver.id}`);
    expect(mine.body.data.map((e: { resourceName: string }) => e.resourceName)).toEqual(['made-by-leaver']);
    const entryId: string = mine.body.data[0].id;
    expect(mine.body.data[0]).toMatchObject({ actorName: 'Lea Ver', actorEmail: 'audit-leaver@example.com' });

    const one = await t.call('GET', `/api/v1/audit-logs/${entryId}`);
    expect(one.status, one.text).toBe(200);
    expect(one.body.data).toEqual(mine.body.data[0]);
    expect(one.body.limits).toBeDefined();

    // Members are removed by an admin's own key (a workspace key acts for no one).
    const adminKey = (await createKey(db, { workspaceId: t.workspaceId, userId: t.userId, type: 'personal' })).secret;
    const removed = await t.call('DELETE', `/api/v1/workspaces/${t.workspaceId}/members/${leaver.id}`, undefined, { 'x-api-key': adminKey });
    expect(removed.status, removed.text).toBe(200);
    const after = await t.call('GET', `/api/v1/audit-logs?workspaceId=${t.workspaceId}&actorId=${leaver.id}`);
    expect(after.body.data).toEqual([]);
    const included = await t.call('GET', `/api/v1/audit-logs?workspaceId=${t.workspaceId}&actorId=${leaver.id}&includeDeparted=true`);
    expect(included.body.data.map((e: { id: string }) => e.id)).toEqual([entryId]);

    // Unknown ids and another workspace's admins: 404, as for a missing entry.
    const missing = await t.call('GET', '/api/v1/audit-logs/00000000-0000-4000-8000-000000000000');
    expect(missing.status).toBe(404);
    expect(missing.body.error).toBe('Audit log not found');
    expect((await t.call('GET', '/api/v1/audit-logs/not-a-uuid')).status).toBe(404);
    const stranger = await createUser(db, 'audit-stranger@example.com');
    const theirs = await createWorkspace(db, 'audit-stranger-ws', stranger.id);
    const strangerKey = (await createKey(db, { workspaceId: theirs.id, userId: stranger.id, type: 'workspace' })).secret;
    const foreign = await t.call('GET', `/api/v1/audit-logs/${entryId}`, undefined, { 'x-api-key': strangerKey });
    expect(foreign.status).toBe(404);
    expect(foreign.body.error).toBe('Audit log not found');
  });
});
