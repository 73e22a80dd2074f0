// GET /api/v1/usage/daily: cost and charged runs per UTC day from the usage events, every day of the
// range present, for the caller's billed account in a workspace (or the workspace's own, for its admins).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as ledger from '../../src/ai/credit-ledger.js';
import { addMember, createKey, createUser, createWorkspace } from '../support/accounts.js';
import { startFakeProviders, type FakeProviders } from '../support/fake-providers.js';
import { request, startTestServer, type TestServer } from '../support/harness.js';
import { deploy, fn, start } from '../support/workflows.js';

let t: TestServer;
let fake: FakeProviders;
let adminKey: string;
let readKey: string;
let readUserId: string;
let foreignWorkspace: string;

beforeAll(async () => {
  fake = await startFakeProviders();
  t = await startTestServer({ env: fake.env });
  const db = t.server.ctx.db;
  await ledger.ensureAccount(db, `workspace:${t.workspaceId}`, 0);
  await ledger.grant(db, `workspace:${t.workspaceId}`, ledger.usdToNano(10), 'test');
  fake.handler = () => ({ text: 'ok', usage: { prompt: 1000, completion: 1000 } });
  adminKey = (await createKey(db, { workspaceId: t.workspaceId, userId: t.userId, type: 'personal' })).secret;
  const reader = await createUser(db, `daily-reader-${Date.now()}@example.com`);
  readUserId = reader.id;
  await addMember(db, t.workspaceId, reader.id, 'read');
  readKey = (await createKey(db, { workspaceId: t.workspaceId, userId: reader.id, type: 'personal' })).secret;
  // A workspace the reader is no member of.
  foreignWorkspace = (await createWorkspace(db, `daily-foreign-${Date.now()}`, t.userId)).id;
});
afterAll(async () => {
  await t?.close();
  await fake?.close();
});

const daily = (query: string, key = t.apiKey) => request(`${t.url}/api/v1/usage/daily?${query}`, 'GET', undefined, { 'x-api-key': key });
const utcDay = (ms: number) => new Date(ms).toISOString().slice(0, 10);

describe('usage per day', () => {
  it('has every day of the range, oldest first, ending today (UTC), with today\'s runs and model cost', async () => {
    const id = await deploy(t, 'daily-runs', { blocks: [start(), fn('answer', 'return 1')], edges: [{ from: 'start', to: 'answer' }] });
    for (let i = 0; i < 2; i++) expect((await t.call('POST', `/api/workflows/${id}/execute`, {})).status).toBe(200);
    const chat = await t.call('POST', '/api/v1/ai/chat/completions', { model: 'gpt-4o', messages: [{ role: 'user', content: 'hi' }] });
    expect(chat.status).toBe(200);
    const aiCost = Number(chat.headers.get('x-credits-used'));
    expect(aiCost).toBeGreaterThan(0);

    const r = await daily(`workspaceId=${t.workspaceId}`);
    expect(r.status).toBe(200);
    expect(r.body.account).toBe(`workspace:${t.workspaceId}`);
    const days: { date: string; costUsd: number; runs: number }[] = r.body.data;
    expect(days).toHaveLength(30);
    const today = Date.now();
    expect(days.map((d) => d.date)).toEqual(Array.from({ length: 30 }, (_, i) => utcDay(today - (29 - i) * 86_400_000)));
    const last = days[29] as { costUsd: number; runs: number };
    expect(last.runs).toBe(2);
    expect(last.costUsd).toBeCloseTo(2 * 0.005 + aiCost, 9);
    expect(days.slice(0, 29).every((d) => d.costUsd === 0 && d.runs === 0)).toBe(true);

    const one = await daily(`workspaceId=${t.workspaceId}&days=1`);
    expect(one.body.data).toEqual([{ date: utcDay(today), costUsd: last.costUsd, runs: 2 }]);
    expect((await daily(`workspaceId=${t.workspaceId}&days=366`)).body.data).toHaveLength(366);
  });

  it('reports a personal key\'s own account; account=workspace only for admins and the workspace\'s keys', async () => {
    const mine = await daily(`workspaceId=${t.workspaceId}`, readKey);
    expect(mine.status).toBe(200);
    expect(mine.body.account).toBe(`user:${readUserId}`);
    expect(mine.body.data.every((d: { runs: number }) => d.runs === 0)).toBe(true);

    const refused = await daily(`workspaceId=${t.workspaceId}&account=workspace`, readKey);
    expect(refused.status).toBe(403);
    expect(refused.body.error).toMatch(/admin/);

    const admin = await daily(`workspaceId=${t.workspaceId}&account=workspace`, adminKey);
    expect(admin.status).toBe(200);
    expect(admin.body.account).toBe(`workspace:${t.workspaceId}`);
    expect(admin.body.data.at(-1).runs).toBeGreaterThanOrEqual(2);
    expect((await daily(`workspaceId=${t.workspaceId}&account=workspace`)).status).toBe(200);
  });

  it('answers 404 for a workspace the caller cannot reach', async () => {
    expect((await daily(`workspaceId=${foreignWorkspace}`, readKey)).status).toBe(404);
    expect((await daily(`workspaceId=${foreignWorkspace}`)).status).toBe(404); // the test key is another workspace's
    expect((await daily('workspaceId=00000000-0000-4000-8000-00000000beef', adminKey)).status).toBe(404);
  });

  it('refuses bad parameters with 400 and an error', async () => {
    for (const query of [
      '', 'workspaceId=not-a-uuid', `workspaceId=${t.workspaceId}&days=0`, `workspaceId=${t.workspaceId}&days=367`,
      `workspaceId=${t.workspaceId}&days=abc`, `workspaceId=${t.workspaceId}&days=1.5`, `workspaceId=${t.workspaceId}&account=user`,
    ]) {
      const r = await daily(query);
      expect(r.status, query).toBe(400);
      expect(typeof r.body.error, query).toBe('string');
    }
    expect((await request(`${t.url}/api/v1/usage/daily?workspaceId=${t.workspaceId}`, 'GET')).status).toBe(401);
  });
});
