// The agent block through a deployed workflow and the execute API: the runs area builds the run's
// AI port with `gateway.portFor(billedAccount, workspaceId)` (wired by the composition root).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as ledger from '../../src/ai/credit-ledger.js';
import { startTestServer, type TestServer } from '../support/harness.js';
import { startFakeProviders, type FakeProviders, type RecordedRequest } from '../support/fake-providers.js';
import { deploy } from '../support/workflows.js';

let t: TestServer;
let fake: FakeProviders;
let account: string;

beforeAll(async () => {
  fake = await startFakeProviders();
  t = await startTestServer({ env: { ...fake.env } });
  account = `workspace:${t.workspaceId}`;
  await ledger.grant(t.server.ctx.db, account, ledger.usdToNano(20), 'test');
});
afterAll(async () => {
  await t?.close();
  await fake?.close();
});

const start = (fields: { name: string; type: string }[] = []) => ({ id: 'start', type: 'start', name: 'Start', config: { inputFormat: fields } });
const lastUser = (req: RecordedRequest) => req.body.messages.filter((m: { role: string }) => m.role === 'user').at(-1)?.content;

describe('through the execute API', () => {
  it('a deployed workflow with an agent runs and bills the workspace', async () => {
    fake.handler = () => ({ text: 'Deployed hello', usage: { prompt: 10, completion: 5 } });
    const id = await deploy(t, 'agent-api', {
      blocks: [start([{ name: 'who', type: 'string' }]), { id: 'agent', type: 'agent', name: 'Agent', config: { model: 'gpt-4o', userPrompt: 'Greet <start.who>' } },
        { id: 'reply', type: 'response', name: 'Reply', config: { data: { text: '<agent.content>', cost: '<agent.cost>' } } }],
      edges: [{ from: 'start', to: 'agent' }, { from: 'agent', to: 'reply' }],
    });
    const before = (await ledger.getBalance(t.server.ctx.db, account))!.balanceNano;
    const r = await t.call('POST', `/api/workflows/${id}/execute`, { who: 'Ada' });
    expect(r.status, r.text).toBe(200);
    expect(r.body).toMatchObject({ text: 'Deployed hello', cost: 0.000075 });
    expect(lastUser(fake.requests.at(-1)!)).toBe('Greet Ada');
    const after = (await ledger.getBalance(t.server.ctx.db, account))!.balanceNano;
    expect(before - after).toBe(75_000);
  });
});
