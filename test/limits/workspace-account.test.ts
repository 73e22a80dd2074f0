// ?workspaceId= on the usage-limits, credits and credit-ledger routes: a workspace's admins (and its own
// keys) read the workspace's billed account instead of their own; others get 403, strangers 404.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as ledger from '../../src/ai/credit-ledger.js';
import { addMember, createKey, createUser, createWorkspace } from '../support/accounts.js';
import { request, startTestServer, type TestServer } from '../support/harness.js';
import { deploy, fn, start } from '../support/workflows.js';

let t: TestServer;
let adminKey: string;
let readKey: string;
let readUserId: string;
let foreignWorkspace: string;

beforeAll(async () => {
  t = await startTestServer();
  const db = t.server.ctx.db;
  await ledger.ensureAccount(db, `workspace:${t.workspaceId}`, 0);
  await ledger.grant(db, `workspace:${t.workspaceId}`, ledger.usdToNano(7), 'workspace grant');
  await ledger.ensureAccount(db, `user:${t.userId}`, 0);
  await ledger.grant(db, `user:${t.userId}`, ledger.usdToNano(2), 'user grant');
  adminKey = (await createKey(db, { workspaceId: t.workspaceId, userId: t.userId, type: 'personal' })).secret;
  const reader = await createUser(db, `ws-account-reader-${Date.now()}@example.com`);
  readUserId = reader.id;
  await addMember(db, t.workspaceId, reader.id, 'read');
  readKey = (await createKey(db, { workspaceId: t.workspaceId, userId: reader.id, type: 'personal' })).secret;
  foreignWorkspace = (await createWorkspace(db, `ws-account-foreign-${Date.now()}`, t.userId)).id;
  // A run of the workspace key: charged to the workspace's account.
  const id = await deploy(t, 'ws-account-run', { blocks: [start(), fn('answer', 'return 1')], edges: [{ from: 'start', to: 'answer' }] });
  expect((await t.call('POST', `/api/workflows/${id}/execute`, {})).status).toBe(200);
});
afterAll(async () => {
  await t?.close();
});

const get = (path: string, key = t.apiKey) => request(`${t.url}${path}`, 'GET', undefined, { 'x-api-key': key });
const ws = () => `workspaceId=${t.workspaceId}`;

describe('the usage-limits report', () => {
  it('is the caller\'s own account without workspaceId (no account field), the workspace\'s for its admin with it', async () => {
    const own = await get('/api/users/me/usage-limits', adminKey);
    expect(own.status).toBe(200);
    expect(own.body.account).toBeUndefined();
    expect(own.body.usage.currentPeriodCost).toBe(0);

    const shared = await get(`/api/users/me/usage-limits?${ws()}`, adminKey);
    expect(shared.status).toBe(200);
    expect(shared.body.account).toBe(`workspace:${t.workspaceId}`);
    expect(shared.body.usage).toMatchObject({ currentPeriodCost: 0.005, plan: 'enterprise' });
    // The same figures the workspace's own key reads without the parameter.
    const byKey = await get('/api/users/me/usage-limits');
    expect(byKey.body.usage).toEqual(shared.body.usage);
    expect(byKey.body.storage).toEqual(shared.body.storage);
    expect((await get(`/api/users/me/usage-limits?${ws()}`)).body.account).toBe(`workspace:${t.workspaceId}`);
  });

  it('refuses a read member (403), a foreign workspace (404) and a malformed id (400)', async () => {
    const refused = await get(`/api/users/me/usage-limits?${ws()}`, readKey);
    expect(refused.status).toBe(403);
    expect(refused.body.error).toMatch(/admin/);
    expect((await get(`/api/users/me/usage-limits?workspaceId=${foreignWorkspace}`, readKey)).status).toBe(404);
    expect((await get(`/api/users/me/usage-limits?workspaceId=${foreignWorkspace}`)).status).toBe(404);
    const bad = await get('/api/users/me/usage-limits?workspaceId=12345', adminKey);
    expect(bad.status).toBe(400);
    expect(typeof bad.body.error).toBe('string');
    expect((await get('/api/users/me/usage-limits', readKey)).status).toBe(200);
  });
});

describe('credits and their ledger', () => {
  it('report the workspace\'s balance and movements to its admin with workspaceId, the caller\'s without', async () => {
    const own = await get('/api/v1/ai/credits', adminKey);
    expect(own.body).toMatchObject({ account: `user:${t.userId}`, balanceUsd: 2 });
    const shared = await get(`/api/v1/ai/credits?${ws()}`, adminKey);
    expect(shared.status).toBe(200);
    expect(shared.body).toMatchObject({ account: `workspace:${t.workspaceId}`, balanceUsd: 7 });

    const ownLedger = await get('/api/v1/ai/credits/ledger', adminKey);
    expect(ownLedger.body.data.map((e: { note: string }) => e.note)).toEqual(['user grant']);
    const sharedLedger = await get(`/api/v1/ai/credits/ledger?${ws()}&limit=10`, adminKey);
    expect(sharedLedger.status).toBe(200);
    expect(sharedLedger.body.data.map((e: { note: string }) => e.note)).toEqual(['workspace grant']);
    expect((await get(`/api/v1/ai/credits?${ws()}`)).body.account).toBe(`workspace:${t.workspaceId}`);
  });

  it('refuse a read member (403), a foreign workspace (404) and a malformed id (400), with an error', async () => {
    for (const path of ['/api/v1/ai/credits', '/api/v1/ai/credits/ledger']) {
      const refused = await get(`${path}?${ws()}`, readKey);
      expect(refused.status, path).toBe(403);
      expect(refused.body.error.message, path).toMatch(/admin/);
      expect((await get(`${path}?workspaceId=${foreignWorkspace}`, readKey)).status, path).toBe(404);
      expect((await get(`${path}?workspaceId=${foreignWorkspace}`)).status, path).toBe(404);
      const bad = await get(`${path}?workspaceId=not-a-uuid`, adminKey);
      expect(bad.status, path).toBe(400);
      expect(bad.body.error.message, path).toEqual(expect.any(String));
      const mine = await get(path, readKey);
      expect(mine.status, path).toBe(200);
    }
    expect((await get('/api/v1/ai/credits', readKey)).body.account).toBe(`user:${readUserId}`);
  });
});
