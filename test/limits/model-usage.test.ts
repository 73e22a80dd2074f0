import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as ledger from '../../src/ai/credit-ledger.js';
import { startFakeProviders, type FakeProviders } from '../support/fake-providers.js';
import { startTestServer, type TestServer } from '../support/harness.js';
import { deploy, start } from '../support/workflows.js';

/** Model tokens count toward the period's usage cost, from the AI interface and from agent blocks alike. */
let t: TestServer;
let fake: FakeProviders;

beforeAll(async () => {
  fake = await startFakeProviders();
  t = await startTestServer({ env: { ...fake.env, WEFT_DEFAULT_PLAN: 'free', WEFT_PLAN_LIMITS: JSON.stringify({ free: { usageLimitUsd: 0.02 } }) } });
  await ledger.ensureAccount(t.server.ctx.db, `workspace:${t.workspaceId}`, 0);
  await ledger.grant(t.server.ctx.db, `workspace:${t.workspaceId}`, ledger.usdToNano(10), 'test');
  fake.handler = () => ({ text: 'ok', usage: { prompt: 1000, completion: 1000 } });
});
afterAll(async () => {
  await t?.close();
  await fake?.close();
});

describe('usage cost includes model tokens', () => {
  it('adds AI interface and agent block costs to currentPeriodCost and caps runs once it is reached', async () => {
    const usage = async () => (await t.call('GET', '/api/users/me/usage-limits')).body.usage.currentPeriodCost as number;
    const before = await usage();
    const chat = await t.call('POST', '/api/v1/ai/chat/completions', { model: 'gpt-4o', messages: [{ role: 'user', content: 'hi' }] });
    expect(chat.status).toBe(200);
    const used = Number(chat.headers.get('x-credits-used'));
    expect(used).toBeGreaterThan(0);
    expect(await usage()).toBeCloseTo(before + used, 6);

    const id = await deploy(t, 'agent-run', {
      blocks: [start(), { id: 'ask', type: 'agent', name: 'Ask', config: { model: 'gpt-4o', userPrompt: 'hello' } }],
      edges: [{ from: 'start', to: 'ask' }],
    });
    const run = await t.call('POST', `/api/workflows/${id}/execute`, {});
    expect(run.status).toBe(200);
    const after = await usage();
    // base charge of the run plus the agent's tokens at catalog prices (2.5 and 10 USD per million)
    expect(after).toBeCloseTo(before + used + 0.005 + (1000 * 2.5 + 1000 * 10) / 1e6, 6);
    expect(after).toBeGreaterThanOrEqual(0.02);
    const refused = await t.call('POST', `/api/workflows/${id}/execute`, {});
    expect(refused.status).toBe(402);
  });
});
