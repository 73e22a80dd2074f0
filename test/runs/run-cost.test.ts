// Per-run cost (issue 30): a run's cost in the logs API (and v2's cost.total) is its base charge plus the
// model usage of its agent, router and evaluator blocks, recorded against its execution id, by model.
// Prices are the catalog's: gpt-4o 2.5/10, gpt-4o-mini 0.15/0.6, claude-haiku-4-5 1/5 USD per million tokens.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as ledger from '../../src/ai/credit-ledger.js';
import { createKey, createWorkspace } from '../support/accounts.js';
import { startFakeProviders, type FakeProviders, type FakeReply, type RecordedRequest } from '../support/fake-providers.js';
import { startTestServer, type TestServer } from '../support/harness.js';
import { deploy, fn, start, waitForJob } from '../support/workflows.js';

const BASE = 0.005;
let t: TestServer;
let fake: FakeProviders;

/** Scripted answers by model: what each block type expects, with fixed token counts. */
function replies(req: RecordedRequest): FakeReply {
  switch (req.body.model) {
    case 'gpt-4o-mini': return { text: '{"route":"tech","reasoning":"It is down."}', usage: { prompt: 2000, completion: 100 } };
    case 'claude-haiku-4-5': return { toolCalls: [{ name: 'evaluation', arguments: { accuracy: 7 } }], usage: { prompt: 200, completion: 20 } };
    default: return { text: 'Hello there', usage: { prompt: 1000, completion: 500 } };
  }
}

beforeAll(async () => {
  fake = await startFakeProviders();
  fake.handler = replies;
  t = await startTestServer({ env: { ...fake.env } });
  await ledger.grant(t.server.ctx.db, `workspace:${t.workspaceId}`, ledger.usdToNano(20), 'test');
});
afterAll(async () => {
  await t?.close();
  await fake?.close();
});

const agent = (id: string, model = 'gpt-4o') => ({ id, type: 'agent', name: id, config: { model, userPrompt: 'Say hello' } });
const chain = (...ids: string[]) => ids.slice(1).map((to, i) => ({ from: ids[i], to }));
const gpt4o = { input: 0.0025, output: 0.005, total: 0.0075, tokens: { prompt: 1000, completion: 500, total: 1500 } };

async function runSync(workflowId: string, body: unknown = {}): Promise<string> {
  const r = await t.call('POST', `/api/workflows/${workflowId}/execute`, body);
  expect(r.status, r.text).toBe(200);
  expect(r.body.success, r.text).toBe(true);
  return r.body.executionId as string;
}

async function logOf(executionId: string, key = t.apiKey) {
  return t.call('GET', `/api/v1/logs/${executionId}`, undefined, { 'x-api-key': key });
}

describe('cost of a run in the logs API', () => {
  it('an agent block: total is the base charge plus the model\'s cost, split into input and output', async () => {
    const id = await deploy(t, 'cost-agent', { blocks: [start(), agent('ask')], edges: chain('start', 'ask') });
    const executionId = await runSync(id);
    const log = await logOf(executionId);
    expect(log.status, log.text).toBe(200);
    expect(log.body.data.cost).toEqual({
      total: BASE + 0.0075, base: BASE, tokens: { prompt: 1000, completion: 500, total: 1500 }, models: { 'gpt-4o': gpt4o },
    });
    expect(log.body.data.costUsd).toBe(log.body.data.cost.total);
  });

  it('agent, router and evaluator blocks each count, by model, and the total is their sum with the base', async () => {
    const id = await deploy(t, 'cost-three', {
      blocks: [
        start(), agent('draft'),
        { id: 'route', type: 'router', name: 'Route', config: { model: 'gpt-4o-mini', prompt: 'Where?', routes: [{ id: 'tech', description: 'Bugs' }, { id: 'sales', description: 'Buying' }] } },
        { id: 'judge', type: 'evaluator', name: 'Judge', config: { model: 'claude-haiku-4-5', content: '<draft.content>', metrics: [{ name: 'accuracy', description: 'Accuracy', min: 0, max: 10 }] } },
      ],
      edges: [...chain('start', 'draft', 'route'), { from: 'route', to: 'judge', branch: 'tech' }],
    });
    const log = await logOf(await runSync(id));
    const cost = log.body.data.cost;
    expect(cost.models).toEqual({
      'gpt-4o': gpt4o,
      'gpt-4o-mini': { input: 0.0003, output: 0.00006, total: 0.00036, tokens: { prompt: 2000, completion: 100, total: 2100 } },
      'claude-haiku-4-5': { input: 0.0002, output: 0.0001, total: 0.0003, tokens: { prompt: 200, completion: 20, total: 220 } },
    });
    expect(cost.base).toBe(BASE);
    expect(cost.total).toBeCloseTo(BASE + 0.0075 + 0.00036 + 0.0003, 9);
    expect(cost.tokens).toEqual({ prompt: 3200, completion: 620, total: 3820 });
  });

  it('several calls to one model add up under that model', async () => {
    const id = await deploy(t, 'cost-twice', { blocks: [start(), agent('one'), agent('two')], edges: chain('start', 'one', 'two') });
    const cost = (await logOf(await runSync(id))).body.data.cost;
    expect(cost.models).toEqual({ 'gpt-4o': { input: 0.005, output: 0.01, total: 0.015, tokens: { prompt: 2000, completion: 1000, total: 3000 } } });
    expect(cost.total).toBeCloseTo(BASE + 0.015, 9);
  });

  it('a run without model blocks costs only its base charge', async () => {
    const id = await deploy(t, 'cost-plain', { blocks: [start(), fn('answer', 'return { ok: true }')], edges: chain('start', 'answer') });
    const cost = (await logOf(await runSync(id))).body.data.cost;
    expect(cost).toEqual({ total: BASE, base: BASE, tokens: { prompt: 0, completion: 0, total: 0 }, models: {} });
  });

  it('a model call that fails costs nothing: only the base charge remains', async () => {
    fake.handler = () => ({ status: 500, errorMessage: 'upstream broke' });
    try {
      const id = await deploy(t, 'cost-failed-call', {
        blocks: [start(), agent('ask'), fn('fallback', 'return { fallback: true }')],
        edges: [{ from: 'start', to: 'ask' }, { from: 'ask', to: 'fallback', on: 'error' }],
      });
      const cost = (await logOf(await runSync(id))).body.data.cost;
      expect(cost).toMatchObject({ total: BASE, base: BASE, models: {} });
    } finally {
      fake.handler = replies;
    }
  });

  it('the list shows each run\'s cost as its own log does, and runs do not share their usage', async () => {
    const id = await deploy(t, 'cost-list', { blocks: [start(), agent('ask')], edges: chain('start', 'ask') });
    const runs = [await runSync(id), await runSync(id)];
    const list = await t.call('GET', `/api/v1/logs?workspaceId=${t.workspaceId}&workflowId=${id}`);
    expect(list.status, list.text).toBe(200);
    expect(list.body.data).toHaveLength(2);
    for (const item of list.body.data) {
      expect(runs).toContain(item.executionId);
      expect(item.cost).toEqual((await logOf(item.executionId)).body.data.cost);
      expect(item.cost.total).toBeCloseTo(BASE + 0.0075, 9);
    }
  });

  it("the list filters on a run's cost (minCost, maxCost, inclusive) and on the models it called", async () => {
    const big = await deploy(t, 'cost-filter-4o', { blocks: [start(), agent('ask')], edges: chain('start', 'ask') });
    const small = await deploy(t, 'cost-filter-mini', { blocks: [start(), agent('ask', 'gpt-4o-mini')], edges: chain('start', 'ask') });
    const plain = await deploy(t, 'cost-filter-plain', { blocks: [start(), fn('f', 'return 1')], edges: chain('start', 'f') });
    const [r4o, rMini, rPlain] = [await runSync(big), await runSync(small), await runSync(plain)];
    const list = async (query: string) => {
      const r = await t.call('GET', `/api/v1/logs?workspaceId=${t.workspaceId}&workflowIds=${big},${small},${plain}&${query}`);
      expect(r.status, r.text).toBe(200);
      return (r.body.data as { executionId: string }[]).map((l) => l.executionId).sort();
    };
    // Costs: gpt-4o 0.0125, gpt-4o-mini 0.00536 (2,000 + 100 tokens), the plain run its base 0.005.
    expect(await list('minCost=0.01')).toEqual([r4o]);
    expect(await list('maxCost=0.0054')).toEqual([rMini, rPlain].sort());
    expect(await list('minCost=0.0051&maxCost=0.006')).toEqual([rMini]);
    expect(await list(`minCost=${BASE}&maxCost=${BASE}`)).toEqual([rPlain]);
    expect(await list('model=gpt-4o')).toEqual([r4o]);
    expect(await list('model=gpt-4o-mini')).toEqual([rMini]);
    expect(await list('model=claude-haiku-4-5')).toEqual([]);
    const bad = await t.call('GET', `/api/v1/logs?workspaceId=${t.workspaceId}&minCost=cheap`);
    expect(bad.status).toBe(400);
    expect(bad.body.error).toMatch(/minCost/);
  });

  it('an async run records its model usage against its execution id too', async () => {
    const id = await deploy(t, 'cost-async', { blocks: [start(), agent('ask')], edges: chain('start', 'ask') });
    const queued = await t.call('POST', `/api/workflows/${id}/execute`, { async: true });
    expect(queued.status, queued.text).toBe(202);
    const job = await waitForJob(t, queued.body.taskId);
    expect(job.status).toBe('completed');
    const cost = (await logOf(queued.body.executionId)).body.data.cost;
    expect(cost).toEqual({ total: BASE + 0.0075, base: BASE, tokens: gpt4o.tokens, models: { 'gpt-4o': gpt4o } });
  });

  it('a child workflow\'s model calls count toward the run that called it', async () => {
    const child = await deploy(t, 'cost-child', { blocks: [start(), agent('ask')], edges: chain('start', 'ask') });
    const parent = await deploy(t, 'cost-parent', {
      blocks: [start(), { id: 'sub', type: 'workflow', name: 'Sub', config: { workflowId: child } }],
      edges: chain('start', 'sub'),
    });
    const cost = (await logOf(await runSync(parent))).body.data.cost;
    expect(cost).toEqual({ total: BASE + 0.0075, base: BASE, tokens: gpt4o.tokens, models: { 'gpt-4o': gpt4o } });
  });

  it('another workspace cannot read the run or its cost, and its own runs cost it alone', async () => {
    const id = await deploy(t, 'cost-private', { blocks: [start(), agent('ask')], edges: chain('start', 'ask') });
    const executionId = await runSync(id);
    const other = (await createWorkspace(t.server.ctx.db, `cost-other-${Date.now()}`, t.userId, 'enterprise')).id;
    const otherKey = (await createKey(t.server.ctx.db, { workspaceId: other, userId: t.userId, type: 'workspace' })).secret;
    await ledger.grant(t.server.ctx.db, `workspace:${other}`, ledger.usdToNano(5), 'test');
    expect((await logOf(executionId, otherKey)).status).toBe(404);
    const list = await t.call('GET', `/api/v1/logs?workspaceId=${other}`, undefined, { 'x-api-key': otherKey });
    expect(list.status, list.text).toBe(200);
    expect(list.body.data).toEqual([]);
    // The other workspace runs the same model: the first run's cost does not change.
    const before = (await logOf(executionId)).body.data.cost;
    const created = await t.call('POST', '/api/v1/workflows', { workspaceId: other, name: 'cost-theirs', definition: { blocks: [start(), agent('ask')], edges: chain('start', 'ask') } }, { 'x-api-key': otherKey });
    expect(created.status, created.text).toBe(201);
    const theirs = created.body.data.workflow.id as string;
    expect((await t.call('POST', `/api/v1/workflows/${theirs}/deploy`, undefined, { 'x-api-key': otherKey })).status).toBe(200);
    const run = await t.call('POST', `/api/workflows/${theirs}/execute`, {}, { 'x-api-key': otherKey });
    expect(run.status, run.text).toBe(200);
    expect((await logOf(executionId)).body.data.cost).toEqual(before);
    expect((await logOf(run.body.executionId, otherKey)).body.data.cost.total).toBeCloseTo(BASE + 0.0075, 9);
  });

  it('a paused run and its resumed run each cost their own model calls', async () => {
    const id = await deploy(t, 'cost-resume', {
      blocks: [start(), agent('before'), { id: 'gate', type: 'human', name: 'Gate', config: { fields: [{ name: 'ok', type: 'boolean' }] } }, agent('after', 'gpt-4o-mini')],
      edges: chain('start', 'before', 'gate', 'after'),
    });
    const paused = await runSync(id);
    expect((await logOf(paused)).body.data.cost).toEqual({ total: BASE + 0.0075, base: BASE, tokens: gpt4o.tokens, models: { 'gpt-4o': gpt4o } });
    const resumed = await t.call('POST', `/api/resume/${id}/${paused}/gate`, { input: { ok: true } });
    expect(resumed.status, resumed.text).toBe(200);
    expect(resumed.body.executionId).not.toBe(paused);
    // The resumed run replays the first agent's recorded answer and calls only the second model.
    const cost = (await logOf(resumed.body.executionId)).body.data.cost;
    expect(cost.models).toEqual({ 'gpt-4o-mini': { input: 0.0003, output: 0.00006, total: 0.00036, tokens: { prompt: 2000, completion: 100, total: 2100 } } });
    expect(cost.total).toBeCloseTo(BASE + 0.00036, 9);
    expect((await logOf(paused)).body.data.cost.models).toEqual({ 'gpt-4o': gpt4o });
  });

  it('the v2 run and runs list report the same total', async () => {
    const id = await deploy(t, 'cost-v2', { blocks: [start(), agent('ask')], edges: chain('start', 'ask') });
    const executionId = await runSync(id);
    const total = (await logOf(executionId)).body.data.cost.total;
    expect(total).toBeCloseTo(BASE + 0.0075, 9);
    const run = await t.call('GET', `/api/v2/workflows/${id}/runs/${executionId}`);
    expect(run.status, run.text).toBe(200);
    expect(run.body.data.cost).toEqual({ total });
    const list = await t.call('GET', `/api/v2/workflows/${id}/runs`);
    expect(list.status, list.text).toBe(200);
    expect(list.body.data.map((r: { cost: unknown }) => r.cost)).toEqual([{ total }]);
  });

  it('the model requests of a run carry its execution id', async () => {
    const id = await deploy(t, 'cost-requests', { blocks: [start(), agent('ask')], edges: chain('start', 'ask') });
    const executionId = await runSync(id);
    // The AI request rows are not on the HTTP surface; the gateway's record is read directly.
    const rows = await t.server.ctx.db.query<{ model: string; status: string }>('SELECT model, status FROM ai_requests WHERE execution_id = $1', [executionId]);
    expect(rows).toEqual([{ model: 'gpt-4o', status: 'settled' }]);
  });
});

describe('the ledger of a shared database (PostgreSQL mode) records the execution id too', () => {
  it('single and batched reservations and settlements: each usage event counts toward its run', async () => {
    // The gateway on the embedded database holds deposits in memory; this is the ledger PostgreSQL deployments use.
    const inDatabase = new ledger.CreditLedger(t.server.ctx.db);
    const account = `workspace:${t.workspaceId}`;
    const runs = ['run-a', 'run-b', 'run-c'].map((r) => `${r}-${Date.now()}`);
    // Submitted together: the first goes alone, the others queue into one batch statement.
    const reserved = await Promise.all(runs.map((executionId, i) => inDatabase.reserve({
      id: `chatcmpl-${executionId}`, account, depositNano: 50_000_000, model: 'gpt-4o', provider: 'openai', stream: false, source: 'workflow',
      workspaceId: t.workspaceId, executionId: i < 2 ? executionId : null,
    })));
    expect(reserved.every((r) => r.ok)).toBe(true);
    await Promise.all(runs.map((executionId) => inDatabase.settle(`chatcmpl-${executionId}`, {
      costNano: 7_500_000, inputCostNano: 2_500_000, promptTokens: 1000, completionTokens: 500, estimated: false, outcome: 'completed',
    })));
    const costs = await t.server.services.limits.runCosts(runs);
    for (const executionId of runs.slice(0, 2)) {
      expect(costs.get(executionId)).toEqual({ total: 0.0075, base: 0, tokens: gpt4o.tokens, models: { 'gpt-4o': gpt4o } });
    }
    // Usage without an execution id belongs to no run.
    expect(costs.has(runs[2])).toBe(false);
  });
});

describe('with a settle window', () => {
  // The gateway may write its own settlements up to the window after answering; a run's calls settle before
  // the block returns, so the cost read right after the run's answer is complete (docs/architecture.md, Per-run cost).
  it('a run\'s model usage is in its cost as soon as the run has answered', async () => {
    const windowed = await startTestServer({ env: { ...fake.env, WEFT_AI_SETTLE_WINDOW_MS: '1000' } });
    try {
      await ledger.grant(windowed.server.ctx.db, `workspace:${windowed.workspaceId}`, ledger.usdToNano(5), 'test');
      const id = await deploy(windowed, 'cost-windowed', { blocks: [start(), agent('ask')], edges: chain('start', 'ask') });
      const r = await windowed.call('POST', `/api/workflows/${id}/execute`, {});
      expect(r.status, r.text).toBe(200);
      const log = await windowed.call('GET', `/api/v1/logs/${r.body.executionId as string}`);
      expect(log.body.data.cost.models).toEqual({ 'gpt-4o': gpt4o });
      expect(log.body.data.cost.total).toBeCloseTo(BASE + 0.0075, 9);
    } finally {
      await windowed.close();
    }
  });
});
