// How many API keys an owner holds: the key list answers all of a workspace's active keys at once, so a
// workspace's workspace keys and a user's personal keys are bounded (MAX_ACTIVE_KEYS), also when creates race
// on PostgreSQL, where each counts in its own transaction. Revoking one makes room again.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAX_ACTIVE_KEYS } from '../../src/accounts/service.js';
import { createKey, createUser, createWorkspace } from '../support/accounts.js';
import { request, startTestServer, type TestServer } from '../support/harness.js';

let t: TestServer;
beforeAll(async () => {
  t = await startTestServer();
});
afterAll(async () => {
  await t?.close();
});

const statuses = (answers: { status: number }[]) => answers.map((r) => r.status).sort();

describe('the number of API keys', () => {
  it(`holds at most ${MAX_ACTIVE_KEYS} workspace keys a workspace; revoking one makes room`, async () => {
    const db = t.server.ctx.db;
    const ws = (await createWorkspace(db, `keys-full-${Date.now()}`, t.userId, 'enterprise')).id;
    const admin = (await createKey(db, { workspaceId: ws, userId: t.userId, type: 'workspace' })).secret;
    // Filled through the service (what the route calls), all but the last two places.
    for (let i = 2; i <= MAX_ACTIVE_KEYS - 2; i++) await createKey(db, { workspaceId: ws, userId: t.userId, type: 'workspace', name: `fill ${i}` });
    const create = (name: string) => request(`${t.url}/api/v1/keys`, 'POST', { workspaceId: ws, name, type: 'workspace' }, { 'x-api-key': admin });
    const racing = await Promise.all(['a', 'b', 'c', 'd'].map((n) => create(`last ${n}`)));
    expect(statuses(racing)).toEqual([201, 201, 400, 400]);
    expect(racing.find((r) => r.status === 400)?.body.error).toContain(`at most ${MAX_ACTIVE_KEYS} workspace keys`);

    const listed = await request(`${t.url}/api/v1/keys?workspaceId=${ws}`, 'GET', undefined, { 'x-api-key': admin });
    expect(listed.status).toBe(200);
    expect(listed.body.data.keys.filter((k: { type: string }) => k.type === 'workspace')).toHaveLength(MAX_ACTIVE_KEYS);

    const made = racing.find((r) => r.status === 201)!.body.data.id as string;
    expect((await request(`${t.url}/api/v1/keys/${made}`, 'DELETE', undefined, { 'x-api-key': admin })).status).toBe(200);
    expect((await create('after a revoke')).status).toBe(201);
    expect((await create('one too many')).status).toBe(400);
  }, 120_000);

  it(`holds at most ${MAX_ACTIVE_KEYS} personal keys a user, whichever workspace they are made in`, async () => {
    const db = t.server.ctx.db;
    const user = await createUser(db, `keys-${Date.now()}@example.com`);
    const ws = (await createWorkspace(db, `keys-personal-${Date.now()}`, user.id, 'enterprise')).id;
    const personal = (await createKey(db, { workspaceId: ws, userId: user.id, type: 'personal' })).secret;
    for (let i = 2; i <= MAX_ACTIVE_KEYS; i++) await createKey(db, { workspaceId: ws, userId: user.id, type: 'personal', name: `fill ${i}` });
    const over = await request(`${t.url}/api/v1/keys`, 'POST', { workspaceId: ws, name: 'one too many', type: 'personal' }, { 'x-api-key': personal });
    expect(over.status, over.text).toBe(400);
    expect(over.body.error).toContain(`at most ${MAX_ACTIVE_KEYS} personal keys`);
    // The bound is the user's: workspace keys of the same workspace are counted apart.
    const workspaceKey = await request(`${t.url}/api/v1/keys`, 'POST', { workspaceId: ws, name: 'workspace', type: 'workspace' }, { 'x-api-key': personal });
    expect(workspaceKey.status, workspaceKey.text).toBe(201);
  }, 120_000);
});
