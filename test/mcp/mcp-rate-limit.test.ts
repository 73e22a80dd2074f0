// What MCP requests cost: one api-bucket token per JSON-RPC message, except a valid tools/call, which is
// admitted as a run (the sync bucket) instead. Unknown tools and bad arguments are paid for; a request the
// bucket cannot cover is refused whole with the API rate limit's 429; malformed params are -32602.
import { randomUUID } from 'node:crypto';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { createKey, createWorkspace } from '../support/accounts.js';
import { request, startTestServer, type TestResponse, type TestServer } from '../support/harness.js';
import { fn, start } from '../support/workflows.js';

// team: an api bucket of 10 (5 a minute, bursts of twice that) and a sync bucket of 6.
const API_BURST = 10;
const SYNC_BURST = 6;
const plans = JSON.stringify({ team: { apiPerMinute: API_BURST / 2, syncPerMinute: SYNC_BURST / 2, concurrentExecutions: 20 } });

let t: TestServer;
const clients: Client[] = [];

beforeAll(async () => {
  t = await startTestServer({ env: { WEFT_DEFAULT_PLAN: 'team', WEFT_PLAN_LIMITS: plans } });
});
afterEach(() => {
  vi.restoreAllMocks();
});
afterAll(async () => {
  await Promise.all(clients.map((c) => c.close().catch(() => undefined)));
  await t?.close();
});

const echo = {
  blocks: [start([{ name: 'text', type: 'string', required: true }]), fn('echo', 'return { said: <start.text> }', 'Echo')],
  edges: [{ from: 'start', to: 'echo' }],
};

interface Account {
  workspaceId: string;
  key: string;
  workflowId: string;
  /** POSTs a JSON-RPC message or batch to the workspace's MCP endpoint. */
  mcp(body: unknown): Promise<TestResponse & { answers: Answer[] }>;
  call(method: string, path: string, body?: unknown): Promise<TestResponse>;
}

interface Answer { id: number | string; result?: any; error?: { code: number; message: string } }

/** The JSON-RPC answers of a text/event-stream (or JSON) body. */
function answersOf(r: TestResponse): Answer[] {
  if (r.status !== 200) return [];
  if (!(r.headers.get('content-type') ?? '').includes('text/event-stream')) return [r.body].flat();
  return r.text.split('\n').filter((l) => l.startsWith('data: ')).map((l) => JSON.parse(l.slice(6)) as Answer);
}

/** A fresh workspace (its own buckets) on the team plan, with one deployed workflow, tool `echo`. */
async function freshAccount(): Promise<Account> {
  const ws = await createWorkspace(t.server.ctx.db, `mcp-rl-${randomUUID().slice(0, 8)}`, t.userId, 'team');
  const key = await createKey(t.server.ctx.db, { workspaceId: ws.id, userId: t.userId, type: 'workspace' });
  const call = (method: string, path: string, body?: unknown) => request(t.url + path, method, body, { 'x-api-key': key.secret });
  // Made directly, not through /api/v1 (which would spend the api bucket under test).
  const actor = { userId: t.userId, type: 'cli' as const };
  const workflow = await t.server.services.workflows.createWorkflow(ws.id, { name: 'Echo', definition: echo }, actor);
  await t.server.services.workflows.deployWorkflow(ws.id, workflow.id, actor);
  const mcp = async (body: unknown) => {
    const r = await request(`${t.url}/api/mcp/${ws.id}`, 'POST', body, { 'x-api-key': key.secret, accept: 'application/json, text/event-stream' });
    return { ...r, answers: answersOf(r) };
  };
  return { workspaceId: ws.id, key: key.secret, workflowId: workflow.id, mcp, call };
}

const list = (id: number) => ({ jsonrpc: '2.0', id, method: 'tools/list' });
const toolCall = (id: number, name: string, args: unknown) => ({ jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: args } });
const unknownTool = (id: number) => toolCall(id, 'no_such_tool', {});
const badArguments = (id: number) => toolCall(id, 'echo', { nope: 1 });
const batch = (n: number, make: (id: number) => unknown) => Array.from({ length: n }, (_, i) => make(i + 1));

async function syncRemaining(a: Account): Promise<number> {
  const r = await a.call('GET', '/api/users/me/usage-limits');
  expect(r.status).toBe(200);
  return r.body.rateLimit.sync.remaining;
}

async function runCount(a: Account): Promise<number> {
  const rows = await t.server.ctx.db.query<{ n: number }>('SELECT count(*)::int AS n FROM executions WHERE workspace_id = $1', [a.workspaceId]);
  return rows[0].n;
}

/** The API rate limit's refusal: 429, Retry-After, `{error, message, retryAfter, retryAfterSeconds}`, no answers. */
function expectRefused(r: TestResponse): void {
  expect(r.status, r.text).toBe(429);
  expect(r.headers.get('retry-after')).toMatch(/^[1-9]\d*$/);
  expect(r.headers.get('x-ratelimit-remaining')).toBeNull();
  expect(r.body).toMatchObject({ error: 'Rate limit exceeded', message: expect.stringMatching(/^API rate limit exceeded/) });
  expect(r.body.retryAfterSeconds).toBe(Number(r.headers.get('retry-after')));
  expect(typeof r.body.retryAfter).toBe('number');
}

describe('MCP requests draw on the api bucket, one token per message', () => {
  it('calls of an unknown tool each take a token: a flood gets 429 once the bucket is spent', async () => {
    const a = await freshAccount();
    for (let i = 1; i <= API_BURST; i++) {
      const r = await a.mcp(unknownTool(i));
      expect(r.status, r.text).toBe(200);
      expect(r.answers[0].result).toMatchObject({ isError: true, content: [{ text: expect.stringContaining('Tool no_such_tool not found') }] });
    }
    expectRefused(await a.mcp(unknownTool(99)));
    // Also when batched: a batch of 100 such calls, on a fresh bucket, is more than it ever holds.
    const b = await freshAccount();
    const flood = await b.mcp(batch(100, unknownTool));
    expectRefused(flood);
    expect(flood.body.message).toContain('100 JSON-RPC messages');
    // Nothing of it was admitted as a run: the sync bucket is untouched.
    expect(await syncRemaining(a)).toBe(SYNC_BURST);
    expect(await syncRemaining(b)).toBe(SYNC_BURST);
  });

  it('calls whose arguments do not match the schema each take a token, and start no run', async () => {
    const a = await freshAccount();
    const half = await a.mcp(batch(API_BURST / 2, badArguments));
    expect(half.status).toBe(200);
    expect(half.answers).toHaveLength(API_BURST / 2);
    for (const answer of half.answers) expect(answer.result.content[0].text).toMatch(/Invalid arguments for tool echo/);
    for (let i = 0; i < API_BURST / 2; i++) expect((await a.mcp(badArguments(1))).status).toBe(200);
    expectRefused(await a.mcp(badArguments(1)));
    expect(await runCount(a)).toBe(0);
    expect(await syncRemaining(a)).toBe(SYNC_BURST);
  });

  it('a batch of tools/list costs a token per message; one the bucket cannot cover is refused whole', async () => {
    const a = await freshAccount();
    const full = await a.mcp(batch(API_BURST, list));
    expect(full.status).toBe(200);
    expect(full.answers.map((x) => x.result.tools.map((tool: { name: string }) => tool.name))).toEqual(Array(API_BURST).fill(['echo']));
    expectRefused(await a.mcp(list(1)));

    const b = await freshAccount();
    expect((await b.mcp(batch(6, list))).status).toBe(200); // 4 left
    const over = await b.mcp([...batch(4, list), { jsonrpc: '2.0', id: 5, method: 'ping' }]);
    expectRefused(over);
    expect(over.body.message).toMatch(/5 JSON-RPC messages/);
    // The refusal handled nothing and spent nothing: the 4 still pass.
    expect((await b.mcp(batch(4, list))).answers).toHaveLength(4);
    expectRefused(await b.mcp(list(1)));
  });

  it('requests racing for the last tokens: one is admitted whole, the other refused whole and spends nothing', async () => {
    const a = await freshAccount();
    expect((await a.mcp(batch(API_BURST - 5, list))).status).toBe(200); // 5 left
    // Unknown-tool calls are priced after the tools are read, so both requests read the bucket before either takes.
    const raced = await Promise.all([a.mcp(batch(3, unknownTool)), a.mcp(batch(3, unknownTool))]);
    expect(raced.map((r) => r.status).sort()).toEqual([200, 429]);
    expectRefused(raced.find((r) => r.status === 429)!);
    expect((await a.mcp(batch(2, list))).status).toBe(200); // what the refused one would have taken is still there
    expectRefused(await a.mcp(list(1)));
  });

  it('initialize, notifications and ping each take a token too (the SDK client connecting spends two)', async () => {
    const a = await freshAccount();
    const client = new Client({ name: 'weft-test', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${t.url}/api/mcp/${a.workspaceId}`), { requestInit: { headers: { 'x-api-key': a.key } } }));
    clients.push(client);
    expect((await client.listTools()).tools.map((x) => x.name)).toEqual(['echo']); // 3 spent
    const notification = await a.mcp({ jsonrpc: '2.0', method: 'notifications/initialized' });
    expect(notification.status).toBe(202); // 4
    expect((await a.mcp(batch(API_BURST - 4, (id) => ({ jsonrpc: '2.0', id, method: 'ping' })))).status).toBe(200);
    expectRefused(await a.mcp({ jsonrpc: '2.0', method: 'notifications/initialized' }));
    await expect(client.listTools()).rejects.toThrow(/Rate limit exceeded/);
  });

  it('a valid tools/call still costs what it did: a run admitted on the sync bucket, no api token', async () => {
    const a = await freshAccount();
    // One valid call among nine unknown-tool calls: nine api tokens, one sync token.
    const mixed = await a.mcp([toolCall(1, 'echo', { text: 'hi' }), ...batch(9, (id) => unknownTool(id + 1))]);
    expect(mixed.status, mixed.text).toBe(200);
    const byId = new Map(mixed.answers.map((x) => [x.id, x]));
    expect(byId.get(1)!.result.structuredContent).toMatchObject({ status: 'completed', output: { said: 'hi' } });
    for (let id = 2; id <= 10; id++) expect(byId.get(id)!.result.isError).toBe(true);
    expect(await syncRemaining(a)).toBe(SYNC_BURST - 1);
    expect((await a.mcp(unknownTool(1))).status).toBe(200); // the tenth api token
    expectRefused(await a.mcp(unknownTool(1)));
    // The api bucket empty, a valid call is still admitted as a run, on the sync bucket only.
    const valid = await a.mcp(toolCall(1, 'echo', { text: 'again' }));
    expect(valid.status, valid.text).toBe(200);
    expect(valid.answers[0].result.structuredContent).toMatchObject({ status: 'completed', output: { said: 'again' } });
    expect(await syncRemaining(a)).toBe(SYNC_BURST - 2);
    expect(await runCount(a)).toBe(2);
  });

  it('reads the workspace\'s workflows once per request, however many messages it holds', async () => {
    const a = await freshAccount();
    const reads = vi.spyOn(t.server.services.workflows, 'list');
    const r = await a.mcp([...batch(4, list), ...batch(4, (id) => unknownTool(id + 4))]);
    expect(r.status, r.text).toBe(200);
    expect(r.answers).toHaveLength(8);
    expect(reads.mock.calls.filter(([ws]) => ws === a.workspaceId)).toHaveLength(1);
  });
});

describe('malformed params', () => {
  it('answer JSON-RPC -32602 "Invalid params", beside the batch\'s other answers', async () => {
    const a = await freshAccount();
    const r = await a.mcp([
      { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: { a: 1 }, arguments: {} } },
      { jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'echo', arguments: [1, 2] } },
      { jsonrpc: '2.0', id: 3, method: 'tools/list', params: { cursor: 5 } },
      { jsonrpc: '2.0', id: 4, method: 'initialize', params: { protocolVersion: 7, capabilities: {} } },
      { jsonrpc: '2.0', id: 5, method: 'tools/list' },
    ]);
    expect(r.status, r.text).toBe(200);
    const byId = new Map(r.answers.map((x) => [x.id, x]));
    for (const id of [1, 2, 3, 4]) {
      expect(byId.get(id)!.error, JSON.stringify(byId.get(id))).toMatchObject({ code: -32602, message: expect.stringMatching(/^Invalid params/) });
    }
    expect(byId.get(1)!.error!.message).toContain('params.name');
    expect(byId.get(5)!.result.tools).toHaveLength(1);
    expect(await runCount(a)).toBe(0);
  });
});
