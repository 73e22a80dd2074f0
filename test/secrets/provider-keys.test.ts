// Workspace provider keys: a workspace secret named for a provider makes that workspace's gateway
// requests and agent blocks reach the provider with the workspace's key, billed no model-token
// credits, and the gateway says which key paid. Another workspace keeps using the operator's key.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as ledger from '../../src/ai/credit-ledger.js';
import { createKey, createWorkspace } from '../support/accounts.js';
import { startFakeProviders, type FakeProviders } from '../support/fake-providers.js';
import { startTestServer, type TestServer } from '../support/harness.js';
import { start } from '../support/workflows.js';

describe('workspace provider keys', () => {
  let t: TestServer;
  let fake: FakeProviders;
  let otherKey: string;
  let otherWorkspace: string;

  beforeAll(async () => {
    fake = await startFakeProviders();
    // The operator configures OpenAI but not Anthropic; accounts start with no credits.
    const { ANTHROPIC_API_KEY: _unset, ...env } = fake.env;
    t = await startTestServer({ env: { ...env, WEFT_AI_STARTING_CREDITS_USD: '0' } });
    otherWorkspace = (await createWorkspace(t.server.ctx.db, `provider-keys-${Date.now()}`, t.userId, 'enterprise')).id;
    otherKey = (await createKey(t.server.ctx.db, { workspaceId: otherWorkspace, userId: t.userId, type: 'workspace' })).secret;
    await ledger.grant(t.server.ctx.db, `workspace:${otherWorkspace}`, ledger.usdToNano(5), 'test');
    for (const [name, value] of [['OPENAI_API_KEY', 'sk-workspace-openai'], ['ANTHROPIC_API_KEY', 'sk-workspace-anthropic']]) {
      expect((await t.call('PUT', `/api/v1/secrets/${name}`, { workspaceId: t.workspaceId, value })).status).toBe(201);
    }
  });

  afterAll(async () => {
    await t?.close();
    await fake?.close();
  });

  const chat = (key: string, model: string) =>
    t.call('POST', '/api/v1/ai/chat/completions', { model, messages: [{ role: 'user', content: 'hi' }] }, { 'x-api-key': key });

  it('gateway requests of the workspace use its key, cost no credits and say so; another workspace uses the operator\'s', async () => {
    fake.requests.length = 0;
    const own = await chat(t.apiKey, 'gpt-4o');
    expect(own.status, own.text).toBe(200);
    expect(own.headers.get('x-weft-key-source')).toBe('workspace');
    expect(own.headers.get('x-credits-used')).toBe('0.000000');
    const other = await chat(otherKey, 'gpt-4o');
    expect(other.status, other.text).toBe(200);
    expect(other.headers.get('x-weft-key-source')).toBe('operator');
    expect(Number(other.headers.get('x-credits-used'))).toBeGreaterThan(0);
    expect(fake.requests.map((r) => r.headers.authorization)).toEqual(['Bearer sk-workspace-openai', 'Bearer sk-fake-openai']);

    // A provider the operator did not configure is reached with the workspace's key; not by others.
    const claude = await chat(t.apiKey, 'claude-sonnet-4-5');
    expect(claude.status, claude.text).toBe(200);
    expect(fake.requests.at(-1)?.headers['x-api-key']).toBe('sk-workspace-anthropic');
    expect((await chat(otherKey, 'claude-sonnet-4-5')).status).toBe(404);

    const streamed = await t.call('POST', '/api/v1/ai/chat/completions', { model: 'gpt-4o', stream: true, messages: [{ role: 'user', content: 'hi' }] });
    expect(streamed.headers.get('x-weft-key-source')).toBe('workspace');
    expect(fake.requests.at(-1)?.headers.authorization).toBe('Bearer sk-workspace-openai');
  });

  it('agent blocks of the workspace use its key; another workspace\'s agent blocks use the operator\'s', async () => {
    const definition = {
      blocks: [start(), { id: 'agent', type: 'agent', name: 'Agent', config: { model: 'gpt-4o', userPrompt: 'Say hi' } }],
      edges: [{ from: 'start', to: 'agent' }],
    };
    const ran: string[] = [];
    for (const [key, workspaceId] of [[t.apiKey, t.workspaceId], [otherKey, otherWorkspace]]) {
      const h = { 'x-api-key': key };
      const created = await t.call('POST', '/api/v1/workflows', { workspaceId, name: 'agent-keys', definition }, h);
      const id = created.body.data.workflow.id;
      await t.call('POST', `/api/v1/workflows/${id}/deploy`, undefined, h);
      fake.requests.length = 0;
      const run = await t.call('POST', `/api/workflows/${id}/execute`, {}, h);
      expect(run.body.success, run.text).toBe(true);
      ran.push(String(fake.requests.at(-1)?.headers.authorization));
    }
    expect(ran).toEqual(['Bearer sk-workspace-openai', 'Bearer sk-fake-openai']);
  });

  it('once the secret is deleted the workspace is back on the operator\'s key (and its credits)', async () => {
    await t.call('DELETE', `/api/v1/secrets/OPENAI_API_KEY?workspaceId=${t.workspaceId}`);
    const r = await chat(t.apiKey, 'gpt-4o');
    expect(r.status).toBe(402);
  });
});
