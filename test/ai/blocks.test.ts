import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { compile, realClock, runWorkflow, type ChildWorkflowPort, type RunResult, type WorkflowDefinition } from '../../src/engine/index.js';
import { GuardedHttp } from '../../src/net/guarded-http.js';
import { IsolatedVmSandbox } from '../../src/sandbox/isolated-vm.js';
import * as ledger from '../../src/ai/credit-ledger.js';
import { startAiServer, type AiTestServer } from './ai-server.js';
import { startFakeProviders, type FakeProviders, type RecordedRequest } from '../support/fake-providers.js';

let t: AiTestServer;
let fake: FakeProviders;
let account: string;
let tools: http.Server;
let toolsUrl = '';
const toolHits: { method: string; url: string; body: string }[] = [];
const sandbox = new IsolatedVmSandbox();
const httpPort = new GuardedHttp({ allowPrivateNetwork: true });
const children: { workflowId: string; input: Record<string, unknown>; depth: number }[] = [];
const childPort: ChildWorkflowPort = {
  async run(workflowId, input, opts) {
    children.push({ workflowId, input, depth: opts.depth });
    if (workflowId === 'broken') return { success: false, output: null, error: 'it broke' };
    return { success: true, output: { stock: 5, sku: input.sku } };
  },
};

beforeAll(async () => {
  fake = await startFakeProviders();
  t = await startAiServer({ env: { ...fake.env } });
  account = `workspace:${t.workspaceId}`;
  await ledger.grant(t.db, account, ledger.usdToNano(20), 'test');
  tools = http.createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      toolHits.push({ method: req.method ?? '', url: req.url ?? '', body });
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ price: 12.5, echo: body ? JSON.parse(body) : null }));
    });
  });
  await new Promise<void>((r) => tools.listen(0, '127.0.0.1', r));
  toolsUrl = `http://127.0.0.1:${(tools.address() as AddressInfo).port}`;
});
afterAll(async () => {
  await t?.close();
  await fake?.close();
  tools?.closeAllConnections();
  await new Promise<void>((r) => tools.close(() => r()));
  sandbox.dispose();
});
beforeEach(() => {
  children.length = 0;
  toolHits.length = 0;
});

const start = (fields: { name: string; type: string }[] = []) => ({ id: 'start', type: 'start', name: 'Start', config: { inputFormat: fields } });

async function run(def: WorkflowDefinition, input: Record<string, unknown> = {}, billed = account): Promise<RunResult> {
  const graph = compile(def);
  return runWorkflow(graph, { input, ports: { http: httpPort, sandbox, clock: realClock, workflows: childPort, ai: t.gateway.portFor(billed, t.workspaceId) } });
}
const outputOf = (r: RunResult, blockId: string): any => r.trace.find((s) => s.blockId === blockId)?.output;
const lastUser = (req: RecordedRequest) => req.body.messages.filter((m: { role: string }) => m.role === 'user').at(-1)?.content;

describe('agent block', () => {
  it('resolves references in its prompts, calls the model and bills the run account', async () => {
    fake.handler = () => ({ text: 'Tides follow the moon.', usage: { prompt: 1000, completion: 500 } });
    const before = (await ledger.getBalance(t.db, account))!.balanceNano;
    const r = await run({
      name: 'a',
      blocks: [start([{ name: 'topic', type: 'string' }]), {
        id: 'writer', type: 'agent', name: 'Writer',
        config: { model: 'gpt-4o', systemPrompt: 'You write one sentence.', userPrompt: 'Write about <start.topic>.', temperature: 0.3, maxTokens: 1000 },
      }],
      edges: [{ from: 'start', to: 'writer' }],
    }, { topic: 'tides' });
    expect(r.status, JSON.stringify(r.error)).toBe('completed');
    expect(r.output).toMatchObject({ content: 'Tides follow the moon.', model: 'gpt-4o', tokens: { prompt: 1000, completion: 500, total: 1500 }, cost: 0.0075, toolCalls: [] });
    const req = fake.requests.at(-1)!;
    expect(req.body.messages).toEqual([{ role: 'system', content: 'You write one sentence.' }, { role: 'user', content: 'Write about tides.' }]);
    expect(req.body).toMatchObject({ temperature: 0.3, max_completion_tokens: 1000 });
    const after = (await ledger.getBalance(t.db, account))!.balanceNano;
    expect(before - after).toBe(7_500_000);
    const rows = await t.db.query<{ source: string; workspace_id: string }>("SELECT source, workspace_id FROM ai_requests WHERE account = $1 ORDER BY created_at DESC LIMIT 1", [account]);
    expect(rows[0]).toEqual({ source: 'workflow', workspace_id: t.workspaceId });
  });

  it('calls workflow and http tools, feeds the results back and answers', async () => {
    fake.handler = (req) => {
      const toolMsgs = req.body.messages.filter((m: { role: string }) => m.role === 'tool');
      if (toolMsgs.length === 0) {
        return { toolCalls: [{ id: 'c1', name: 'check_stock', arguments: { sku: 'A-1' } }, { id: 'c2', name: 'get_price', arguments: { sku: 'A-1' } }], usage: { prompt: 50, completion: 20 } };
      }
      return { text: `Answer using ${toolMsgs.map((m: { content: string }) => m.content).join(' and ')}`, usage: { prompt: 80, completion: 30 } };
    };
    const r = await run({
      name: 'tools',
      blocks: [start(), {
        id: 'agent', type: 'agent', name: 'Agent',
        config: {
          model: 'gpt-4.1-mini', userPrompt: 'Is A-1 in stock and what does it cost?',
          tools: [
            { type: 'workflow', name: 'check_stock', description: 'Stock of a SKU', workflowId: 'wf-stock', parameters: { type: 'object', properties: { sku: { type: 'string' } }, required: ['sku'] } },
            { type: 'http', name: 'get_price', description: 'Price of a SKU', url: `${toolsUrl}/price`, method: 'POST', parameters: { type: 'object', properties: { sku: { type: 'string' } } } },
          ],
        },
      }],
      edges: [{ from: 'start', to: 'agent' }],
    });
    expect(r.status, JSON.stringify(r.error)).toBe('completed');
    expect(children).toEqual([{ workflowId: 'wf-stock', input: { sku: 'A-1' }, depth: 1 }]);
    expect(toolHits).toEqual([{ method: 'POST', url: '/price', body: '{"sku":"A-1"}' }]);
    const out = r.output as any;
    expect(out.content).toBe('Answer using {"stock":5,"sku":"A-1"} and {"price":12.5,"echo":{"sku":"A-1"}}');
    expect(out.tokens).toEqual({ prompt: 130, completion: 50, total: 180 });
    expect(out.toolCalls).toEqual([
      { name: 'check_stock', arguments: { sku: 'A-1' }, result: { stock: 5, sku: 'A-1' } },
      { name: 'get_price', arguments: { sku: 'A-1' }, result: { price: 12.5, echo: { sku: 'A-1' } } },
    ].sort((a, b) => out.toolCalls.findIndex((c: any) => c.name === a.name) - out.toolCalls.findIndex((c: any) => c.name === b.name)));
    const second = fake.requests.at(-1)!.body;
    expect(second.tools.map((x: any) => x.function.name)).toEqual(['check_stock', 'get_price']);
    expect(second.messages.slice(1)).toEqual([
      { role: 'assistant', content: null, tool_calls: [
        { id: 'c1', type: 'function', function: { name: 'check_stock', arguments: '{"sku":"A-1"}' } },
        { id: 'c2', type: 'function', function: { name: 'get_price', arguments: '{"sku":"A-1"}' } },
      ] },
      { role: 'tool', tool_call_id: 'c1', content: '{"stock":5,"sku":"A-1"}' },
      { role: 'tool', tool_call_id: 'c2', content: '{"price":12.5,"echo":{"sku":"A-1"}}' },
    ]);
  });

  it('reports a failing tool to the model instead of failing the block', async () => {
    fake.handler = (req) => JSON.stringify(req.body.messages).includes('"tool_result"')
      ? { text: 'The tool failed.' }
      : { toolCalls: [{ id: 'x', name: 'stock', arguments: {} }] };
    const r = await run({
      name: 'broken', blocks: [start(), { id: 'agent', type: 'agent', name: 'Agent', config: { model: 'claude-haiku-4-5', userPrompt: 'go', tools: [{ type: 'workflow', name: 'stock', workflowId: 'broken' }] } }],
      edges: [{ from: 'start', to: 'agent' }],
    });
    expect(r.status, JSON.stringify(r.error)).toBe('completed');
    expect((r.output as any).toolCalls).toEqual([{ name: 'stock', arguments: {}, error: 'workflow broken failed: it broke' }]);
    const toolResult = fake.requests.at(-1)!.body.messages.at(-1).content[0];
    expect(toolResult).toEqual({ type: 'tool_result', tool_use_id: 'x', content: '{"error":"workflow broken failed: it broke"}' });
  });

  it('bounds the tool loop to 10 rounds, then asks for the answer without tools', async () => {
    let calls = 0;
    fake.handler = (req) => {
      calls++;
      return req.body.tools ? { toolCalls: [{ id: `c${calls}`, name: 'price', arguments: { n: calls } }] } : { text: 'final answer' };
    };
    const r = await run({
      name: 'loop', blocks: [start(), { id: 'agent', type: 'agent', name: 'Agent', config: { model: 'gpt-4o-mini', userPrompt: 'loop forever', tools: [{ type: 'http', name: 'price', url: `${toolsUrl}/p`, method: 'GET' }] } }],
      edges: [{ from: 'start', to: 'agent' }],
    });
    expect(r.status, JSON.stringify(r.error)).toBe('completed');
    expect(toolHits).toHaveLength(10);
    expect(toolHits[0].url).toBe('/p?n=1');
    expect(calls).toBe(12);
    expect((r.output as any).content).toBe('final answer');
  });

  it('returns structured output fields by JSON schema', async () => {
    fake.handler = () => ({ text: '{"title":"Tides","score":7}' });
    const schema = { type: 'object', properties: { title: { type: 'string' }, score: { type: 'number' } }, required: ['title', 'score'] };
    const r = await run({
      name: 'json',
      blocks: [start(), { id: 'agent', type: 'agent', name: 'Agent', config: { model: 'gemini-2.5-flash', userPrompt: 'Rate it.', responseFormat: { name: 'rating', schema } } },
        { id: 'use', type: 'function', name: 'Use', config: { code: 'return { doubled: <agent.score> * 2, title: <agent.title> }' } }],
      edges: [{ from: 'start', to: 'agent' }, { from: 'agent', to: 'use' }],
    });
    expect(r.status, JSON.stringify(r.error)).toBe('completed');
    expect(outputOf(r, 'agent')).toMatchObject({ title: 'Tides', score: 7, content: '{"title":"Tides","score":7}' });
    expect(r.output).toEqual({ doubled: 14, title: 'Tides' });
    expect(fake.requests.at(-1)!.body.generationConfig).toMatchObject({ responseMimeType: 'application/json', responseSchema: schema });
  });

  it('fails with a clear message when the account has no credits or the model is unknown', async () => {
    const poor = `workspace:00000000-0000-4000-8000-0000000000aa`;
    const r = await run({ name: 'poor', blocks: [start(), { id: 'agent', type: 'agent', name: 'Agent', config: { model: 'gpt-4o', userPrompt: 'hi' } }], edges: [{ from: 'start', to: 'agent' }] }, {}, poor);
    expect(r.status).toBe('failed');
    expect(r.error?.message).toMatch(/Insufficient credits/);
    const u = await run({ name: 'u', blocks: [start(), { id: 'agent', type: 'agent', name: 'Agent', config: { model: 'nope-1', userPrompt: 'hi' } }], edges: [{ from: 'start', to: 'agent' }] });
    expect(u.status).toBe('failed');
    expect(u.error?.message).toMatch(/nope-1.*does not exist/);
  });
});

describe('router block', () => {
  const def = (model: string): WorkflowDefinition => ({
    name: 'route',
    blocks: [
      start([{ name: 'ticket', type: 'string' }]),
      { id: 'route', type: 'router', name: 'Route', config: { model, prompt: 'Ticket: <start.ticket>', routes: [{ id: 'billing', description: 'Invoices, refunds, payments' }, { id: 'tech', description: 'Bugs, outages, errors' }] } },
      { id: 'bill', type: 'function', name: 'Bill', config: { code: 'return { team: "billing" }' } },
      { id: 'eng', type: 'function', name: 'Eng', config: { code: 'return { team: "engineering", why: <route.reasoning> }' } },
      { id: 'fallback', type: 'function', name: 'Fallback', config: { code: 'return { team: "triage" }' } },
    ],
    edges: [
      { from: 'start', to: 'route' },
      { from: 'route', to: 'bill', branch: 'billing' },
      { from: 'route', to: 'eng', branch: 'tech' },
      { from: 'route', to: 'fallback', on: 'error' },
    ],
  });

  it('takes the branch of the route the model picks', async () => {
    fake.handler = () => ({ text: '{"route":"tech","reasoning":"The site is down."}', usage: { prompt: 60, completion: 12 } });
    const r = await run(def('gpt-4o-mini'), { ticket: 'The site is down!' });
    expect(r.status, JSON.stringify(r.error)).toBe('completed');
    expect(r.output).toEqual({ team: 'engineering', why: 'The site is down.' });
    expect(r.trace.map((s) => s.blockId)).not.toContain('bill');
    expect(outputOf(r, 'route')).toMatchObject({ selectedRoute: 'tech', reasoning: 'The site is down.', model: 'gpt-4o-mini', tokens: { prompt: 60, completion: 12, total: 72 } });
    const req = fake.requests.at(-1)!.body;
    expect(req.response_format.type).toBe('json_schema');
    expect(req.response_format.json_schema.schema.properties.route.enum).toEqual(['billing', 'tech']);
    expect(lastUser(fake.requests.at(-1)!)).toBe('Ticket: The site is down!');
  });

  it('works with a provider that does structured output through a forced tool', async () => {
    fake.handler = () => ({ toolCalls: [{ name: 'route_choice', arguments: { route: 'billing', reasoning: 'About a refund.' } }] });
    const r = await run(def('claude-sonnet-4-5'), { ticket: 'Refund please' });
    expect(r.output).toEqual({ team: 'billing' });
  });

  it('an unknown route is a block error (here caught by an error edge)', async () => {
    fake.handler = () => ({ text: '{"route":"sales","reasoning":"?"}' });
    const r = await run(def('gpt-4o-mini'), { ticket: 'Buy' });
    expect(r.status).toBe('completed');
    expect(r.output).toEqual({ team: 'triage' });
    const step = r.trace.find((s) => s.blockId === 'route')!;
    expect(step.status).toBe('error');
    expect(step.error).toMatch(/"sales", which is not one of the routes/);
  });

  it('exposes the route ids as handles', async () => {
    const { blockTypes } = await import('../../src/engine/index.js');
    const router = blockTypes.get('router')!;
    expect(router.handles!({ model: 'm', prompt: 'p', routes: [{ id: 'a', description: 'x' }, { id: 'b', description: 'y' }] } as never)).toEqual(['a', 'b']);
    expect(() => compile({ name: 'bad', blocks: [start(), { id: 'r', type: 'router', name: 'R', config: { model: 'm', prompt: 'p', routes: [] } }], edges: [{ from: 'start', to: 'r' }] })).toThrow();
  });
});

describe('evaluator block', () => {
  it('scores content on each metric, one number per metric, clamped to its range', async () => {
    fake.handler = () => ({ toolCalls: [{ name: 'evaluation', arguments: { accuracy: 8, tone: 7 } }], usage: { prompt: 200, completion: 20 } });
    const r = await run({
      name: 'eval',
      blocks: [start([{ name: 'text', type: 'string' }]), {
        id: 'judge', type: 'evaluator', name: 'Judge',
        config: {
          model: 'claude-haiku-4-5', content: '<start.text>',
          metrics: [{ name: 'accuracy', description: 'Factual accuracy', min: 0, max: 10 }, { name: 'tone', description: 'Politeness', min: 1, max: 5 }],
        },
      }],
      edges: [{ from: 'start', to: 'judge' }],
    }, { text: 'The moon causes tides.' });
    expect(r.status, JSON.stringify(r.error)).toBe('completed');
    expect(r.output).toEqual({ accuracy: 8, tone: 5, model: 'claude-haiku-4-5', tokens: { prompt: 200, completion: 20, total: 220 }, cost: 0.0003 });
    const req = fake.requests.at(-1)!.body;
    expect(req.tools[0].input_schema.properties.tone).toMatchObject({ type: 'number', minimum: 1, maximum: 5 });
    expect(req.tool_choice).toEqual({ type: 'tool', name: 'evaluation' });
  });

  it('a missing score is a block error', async () => {
    fake.handler = () => ({ text: '{"accuracy":"n/a"}' });
    const r = await run({
      name: 'eval2',
      blocks: [start(), { id: 'judge', type: 'evaluator', name: 'Judge', config: { model: 'gpt-4o', content: 'x', metrics: [{ name: 'accuracy', description: 'a', min: 0, max: 1 }] } }],
      edges: [{ from: 'start', to: 'judge' }],
    });
    expect(r.status).toBe('failed');
    expect(r.error?.message).toMatch(/no numeric score for metric "accuracy"/);
  });
});
