// A workspace key acts as its workspace, never as the user who made it (security finding, critical 1).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createKey, createWorkspace } from '../support/accounts.js';
import { request, startTestServer, type TestServer } from '../support/harness.js';

let t: TestServer;
let otherWorkspace: string;
let adminPersonalKey: string;
beforeAll(async () => {
  t = await startTestServer();
  // The bootstrap key of the harness is a workspace key made by the instance administrator (as `weft keys create` does).
  otherWorkspace = (await createWorkspace(t.server.ctx.db, `scope-other-${Date.now()}`, t.userId, 'free')).id;
  adminPersonalKey = (await createKey(t.server.ctx.db, { workspaceId: t.workspaceId, userId: t.userId, type: 'personal', name: 'admin personal' })).secret;
});
afterAll(async () => {
  await t?.close();
});

const asKey = (key: string) => ({ 'x-api-key': key });

describe('a workspace key of the instance administrator', () => {
  it('cannot mint a personal key of its creator', async () => {
    const r = await t.call('POST', '/api/v1/keys', { workspaceId: t.workspaceId, name: 'escalate', type: 'personal' });
    expect(r.status).toBe(403);
    expect(r.body.error).toMatch(/Workspace API keys cannot create personal keys/);
    const keys = await t.call('GET', `/api/v1/keys?workspaceId=${t.workspaceId}`);
    expect(keys.body.data.keys.some((k: { name: string }) => k.name === 'escalate')).toBe(false);
  });

  it('cannot change its workspace plan, and the plan stays as it was', async () => {
    const before = await t.call('GET', `/api/v1/workspaces/${t.workspaceId}`);
    const r = await t.call('PUT', `/api/v1/workspaces/${t.workspaceId}/plan`, { plan: 'free' });
    expect(r.status).toBe(403);
    const after = await t.call('GET', `/api/v1/workspaces/${t.workspaceId}`);
    expect(after.body.data.workspace.plan).toBe(before.body.data.workspace.plan);
  });

  it('cannot manage members', async () => {
    const r = await t.call('PUT', `/api/v1/workspaces/${t.workspaceId}/members/${t.userId}`, { role: 'read' });
    expect(r.status).toBe(403);
    expect(r.body.error).toMatch(/cannot manage members/);
  });

  it('cannot revoke its creator\'s personal keys', async () => {
    const keys = await request(`${t.url}/api/v1/keys?workspaceId=${t.workspaceId}`, 'GET', undefined, asKey(adminPersonalKey));
    const personal = keys.body.data.keys.find((k: { name: string }) => k.name === 'admin personal');
    const r = await t.call('DELETE', `/api/v1/keys/${personal.id}`);
    expect(r.status).toBe(404);
    const still = await request(`${t.url}/api/v1/workspaces/${t.workspaceId}`, 'GET', undefined, asKey(adminPersonalKey));
    expect(still.status).toBe(200);
  });

  it('reaches nothing in another workspace of its creator', async () => {
    for (const path of [`/api/v1/workspaces/${otherWorkspace}`, `/api/v1/workflows?workspaceId=${otherWorkspace}`, `/api/v1/keys?workspaceId=${otherWorkspace}`]) {
      const r = await t.call('GET', path);
      expect([403, 404]).toContain(r.status);
    }
  });
});

describe('a personal key of the instance administrator', () => {
  it('mints its own personal keys and changes plans, and the audit log records the kind of key', async () => {
    const minted = await request(`${t.url}/api/v1/keys`, 'POST', { workspaceId: t.workspaceId, name: 'mine', type: 'personal' }, asKey(adminPersonalKey));
    expect(minted.status).toBe(201);
    expect(minted.body.data.type).toBe('personal');
    expect(minted.body.data.userId).toBe(t.userId);

    const plan = await request(`${t.url}/api/v1/workspaces/${t.workspaceId}/plan`, 'PUT', { plan: 'team' }, asKey(adminPersonalKey));
    expect(plan.status).toBe(200);
    const ws = await t.call('GET', `/api/v1/workspaces/${t.workspaceId}`);
    expect(ws.body.data.workspace.plan).toBe('team');

    const audit = await t.call('GET', `/api/v1/audit-logs?workspaceId=${t.workspaceId}&limit=100`);
    const planEntry = audit.body.data.find((e: { action: string }) => e.action === 'workspace.plan_changed');
    expect(planEntry.actorType).toBe('personal_key');
    expect(planEntry.actorId).toBe(t.userId);
    const created = audit.body.data.find((e: { action: string; resourceName: string }) => e.action === 'api_key.created' && e.resourceName === 'mine');
    expect(created.actorType).toBe('personal_key');
  });

  it('records workspace-key actions as the workspace, with no user', async () => {
    const made = await t.call('POST', '/api/v1/keys', { workspaceId: t.workspaceId, name: 'by-workspace-key', type: 'workspace' });
    expect(made.status).toBe(201);
    const audit = await t.call('GET', `/api/v1/audit-logs?workspaceId=${t.workspaceId}&limit=100`);
    const entry = audit.body.data.find((e: { action: string; resourceName: string }) => e.action === 'api_key.created' && e.resourceName === 'by-workspace-key');
    expect(entry.actorType).toBe('workspace_key');
    expect(entry.actorId).toBeNull();
  });

  it('of a user who is not an instance administrator cannot change plans', async () => {
    const { createUser } = await import('../support/accounts.js');
    const user = await createUser(t.server.ctx.db, `member-${Date.now()}@example.com`);
    const { addMember } = await import('../support/accounts.js');
    await addMember(t.server.ctx.db, t.workspaceId, user.id, 'admin');
    const key = (await createKey(t.server.ctx.db, { workspaceId: t.workspaceId, userId: user.id, type: 'personal' })).secret;
    const r = await request(`${t.url}/api/v1/workspaces/${t.workspaceId}/plan`, 'PUT', { plan: 'free' }, asKey(key));
    expect(r.status).toBe(403);
    expect(r.body.error).toMatch(/instance administrators/);
  });
});
