// One door for every run (issue 27 items 2 and 3): each way of starting or continuing work is refused
// over the usage cap (402), with its rate bucket empty (429 with Retry-After) and with no concurrency slot
// (429), writing nothing; and the usage cap is reserved atomically, so concurrent runs never overshoot it.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { HttpError } from '../../src/http/errors.js';
import { recordCost } from '../../src/limits/usage.js';
import { createKey, createWorkspace } from '../support/accounts.js';
import { request, startTestServer, type TestResponse, type TestServer } from '../support/harness.js';
import { fn, start } from '../support/workflows.js';

// team: tiny execution buckets (burst 2) and one run at a time; enterprise: a cap of ten base charges.
const plans = JSON.stringify({
  team: { syncPerMinute: 1, asyncPerMinute: 1, apiPerMinute: 30, concurrentExecutions: 1, usageLimitUsd: 1 },
  enterprise: { usageLimitUsd: 0.05 },
});

let t: TestServer;
const limits = () => t.server.services.limits;
const clients: Client[] = [];

beforeAll(async () => {
  t = await startTestServer({ env: { WEFT_DEFAULT_PLAN: 'team', WEFT_PLAN_LIMITS: plans } });
});
afterAll(async () => {
  await Promise.all(clients.map((c) => c.close().catch(() => undefined)));
  await t?.close();
});

const simple = { blocks: [start(), fn('f', 'return 1', 'F')], edges: [{ from: 'start', to: 'f' }] };
const approval = {
  blocks: [
    start(),
    { id: 'approval', type: 'human', name: 'Approval', config: { message: 'Approve?', fields: [{ name: 'decision', type: 'string', required: true }] } },
    fn('after', 'return { decision: <approval.decision> }', 'After'),
  ],
  edges: [{ from: 'start', to: 'approval' }, { from: 'approval', to: 'after' }],
};
const webhookFlow = (responseMode?: string) => ({
  blocks: [{ id: 'hook', type: 'webhook', name: 'Webhook', config: responseMode ? { responseMode } : {} }, fn('f', 'return 1', 'F')],
  edges: [{ from: 'hook', to: 'f' }],
});

interface Account {
  workspaceId: string;
  account: string;
  plan: string;
  key: string;
  workflowId: string;
  call(method: string, path: string, body?: unknown, headers?: Record<string, string>): Promise<TestResponse>;
}

/** A fresh workspace (its own buckets, slots and usage) with one deployed workflow. */
async function freshAccount(definition: unknown, plan = 'team'): Promise<Account> {
  const ws = await createWorkspace(t.server.ctx.db, `adm-${randomUUID().slice(0, 8)}`, t.userId, plan);
  const key = await createKey(t.server.ctx.db, { workspaceId: ws.id, userId: t.userId, type: 'workspace' });
  const call = (method: string, path: string, body?: unknown, headers: Record<string, string> = {}) =>
    request(t.url + path, method, body, { 'x-api-key': key.secret, ...headers });
  const created = await call('POST', '/api/v1/workflows', { workspaceId: ws.id, name: 'w', definition });
  expect(created.status).toBe(201);
  const workflowId = created.body.data.workflow.id as string;
  expect((await call('POST', `/api/v1/workflows/${workflowId}/deploy`)).status).toBe(200);
  return { workspaceId: ws.id, account: `workspace:${ws.id}`, plan, key: key.secret, workflowId, call };
}

/** Takes every token of the account's `bucket` (through the same admission the entry points use). */
async function drain(a: Account, bucket: 'sync' | 'async'): Promise<void> {
  for (let i = 0; i < 10; i++) {
    try {
      const admission = await limits().admitRun(a.account, a.plan, { bucket, mode: bucket });
      await admission.release();
    } catch (err) {
      if (err instanceof HttpError && err.status === 429) return;
      throw err;
    }
  }
  throw new Error('the bucket did not empty');
}

/** Holds the account's only concurrency slot until the returned function is called. */
async function holdSlot(a: Account): Promise<() => Promise<void>> {
  const admission = await limits().admitRun(a.account, a.plan, { bucket: 'async', mode: 'async' });
  return admission.release;
}

/** Puts the account's period cost past its cap. */
async function overCap(a: Account): Promise<void> {
  await recordCost(t.server.ctx.db, { account: a.account, amountUsd: 2, source: 'test', idempotencyKey: `over-${randomUUID()}`, at: new Date(limits().clock.now()) });
}

const runCount = async (a: Account) =>
  (await t.server.ctx.db.query<{ n: number }>('SELECT count(*)::int AS n FROM executions WHERE workspace_id = $1', [a.workspaceId]))[0].n;

/** How an entry point answered: its HTTP status (or the status its message stands for) and Retry-After. */
interface Outcome { status: number; retryAfter: string | null; message: string }

const fromResponse = (r: TestResponse): Outcome => ({
  status: r.status, retryAfter: r.headers.get('retry-after'), message: r.text,
});

async function mcpToolCall(a: Account): Promise<Outcome> {
  const client = new Client({ name: 'weft-test', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(`${t.url}/api/mcp/${a.workspaceId}`), { requestInit: { headers: { 'x-api-key': a.key } } }));
  clients.push(client);
  const result = await client.callTool({ name: 'w', arguments: {} });
  const message = (result.content as { text: string }[])[0]?.text ?? '';
  // A refusal is a tool error carrying the limit's message (the MCP call itself succeeds).
  const status = !result.isError ? 200 : /Usage limit exceeded/.test(message) ? 402 : /Rate limit exceeded|Too many concurrent/.test(message) ? 429 : 500;
  return { status, retryAfter: null, message };
}

const form = (fields: Record<string, string>) => ({ body: new URLSearchParams(fields).toString(), headers: { 'content-type': 'application/x-www-form-urlencoded' } });

/** A paused sync run of `a`'s approval workflow: its execution id. */
async function pausedRun(a: Account): Promise<string> {
  const run = await a.call('POST', `/api/workflows/${a.workflowId}/execute`, {});
  expect(run.status).toBe(200);
  return run.body.executionId;
}

interface EntryPoint {
  name: string;
  /** The rate bucket it draws on. */
  bucket: 'sync' | 'async';
  definition: unknown;
  /** Work done before the limit is applied (a paused run to resume). */
  prepare?: (a: Account) => Promise<string>;
  enter: (a: Account, prepared: string) => Promise<Outcome>;
}

const execute = (body: unknown) => (a: Account) => a.call('POST', `/api/workflows/${a.workflowId}/execute`, body).then(fromResponse);
const executeV2 = (body: unknown) => (a: Account) => a.call('POST', `/api/v2/workflows/${a.workflowId}/execute`, body).then(fromResponse);
const webhook = async (a: Account) => {
  const url = (await a.call('GET', `/api/v1/workflows/${a.workflowId}`)).body.data.workflow.webhookUrl as string;
  return fromResponse(await request(url, 'POST', { a: 1 }));
};

const entryPoints: EntryPoint[] = [
  { name: 'execute v1 (sync)', bucket: 'sync', definition: simple, enter: execute({}) },
  { name: 'execute v1 (async)', bucket: 'async', definition: simple, enter: execute({ async: true }) },
  { name: 'execute v1 (stream)', bucket: 'sync', definition: simple, enter: execute({ stream: true }) },
  { name: 'execute v1 (draft run)', bucket: 'sync', definition: simple, enter: execute({ useDraftState: true }) },
  { name: 'execute v2 (sync)', bucket: 'sync', definition: simple, enter: executeV2({ input: {} }) },
  { name: 'execute v2 (async)', bucket: 'async', definition: simple, enter: executeV2({ input: {}, async: true }) },
  { name: 'execute v2 (stream)', bucket: 'sync', definition: simple, enter: executeV2({ input: {}, stream: true }) },
  { name: 'webhook (result mode)', bucket: 'sync', definition: webhookFlow('result'), enter: webhook },
  { name: 'webhook (acknowledged)', bucket: 'async', definition: webhookFlow(), enter: webhook },
  { name: 'MCP tools/call', bucket: 'sync', definition: simple, enter: mcpToolCall },
  {
    name: 'resume (API)', bucket: 'sync', definition: approval, prepare: pausedRun,
    enter: (a, exec) => a.call('POST', `/api/resume/${a.workflowId}/${exec}/approval`, { input: { decision: 'yes' } }).then(fromResponse),
  },
  {
    name: 'resume (v2 API)', bucket: 'sync', definition: approval, prepare: pausedRun,
    enter: (a, exec) => a.call('POST', `/api/v2/workflows/${a.workflowId}/runs/${exec}/resume`, { contextId: 'approval', input: { decision: 'yes' } }).then(fromResponse),
  },
  {
    name: 'resume (page form)', bucket: 'sync', definition: approval, prepare: pausedRun,
    enter: async (a, exec) => {
      const f = form({ apiKey: a.key, decision: 'yes' });
      return fromResponse(await request(`${t.url}/resume/${a.workflowId}/${exec}/approval`, 'POST', f.body, f.headers));
    },
  },
];

describe('every entry point passes the one admission', () => {
  for (const entry of entryPoints) {
    it(`${entry.name}: 402 over the usage cap, 429 with Retry-After when its bucket is empty, 429 without a concurrency slot; nothing runs`, async () => {
      // Over the usage cap.
      const capped = await freshAccount(entry.definition);
      const cappedPrep = (await entry.prepare?.(capped)) ?? '';
      const before = await runCount(capped);
      await overCap(capped);
      const overUsage = await entry.enter(capped, cappedPrep);
      expect(overUsage.status, overUsage.message).toBe(402);
      expect(overUsage.message).toMatch(/Usage limit exceeded/);
      expect(await runCount(capped)).toBe(before);

      // The entry point's own bucket empty.
      const limited = await freshAccount(entry.definition);
      const limitedPrep = (await entry.prepare?.(limited)) ?? '';
      await drain(limited, entry.bucket);
      const empty = await entry.enter(limited, limitedPrep);
      expect(empty.status, empty.message).toBe(429);
      expect(empty.message).toMatch(/Rate limit exceeded/);
      if (entry.name !== 'MCP tools/call') expect(empty.retryAfter).toMatch(/^[1-9]\d*$/);
      expect(await runCount(limited)).toBe(before);

      // Every concurrency slot taken.
      const busy = await freshAccount(entry.definition);
      const busyPrep = (await entry.prepare?.(busy)) ?? '';
      const release = await holdSlot(busy);
      try {
        const full = await entry.enter(busy, busyPrep);
        expect(full.status, full.message).toBe(429);
        expect(full.message).toMatch(/Too many concurrent executions/);
        if (entry.name !== 'MCP tools/call') expect(full.retryAfter).toBe('5');
        expect(await runCount(busy)).toBe(before);
      } finally {
        await release();
      }
      // Within every limit it runs (the refusals above were the limits', not the entry point's): a minute
      // later, once the refused attempts' tokens are back.
      limits().clock.offsetMs += 60_000;
      try {
        const ok = await entry.enter(busy, busyPrep);
        expect(ok.status, ok.message).toBeLessThan(300);
      } finally {
        limits().clock.offsetMs -= 60_000;
      }
    });
  }

  it('MCP tools/call draws on the sync bucket, not the async one', async () => {
    const a = await freshAccount(simple);
    await drain(a, 'async');
    expect((await mcpToolCall(a)).status).toBe(200);
    await drain(a, 'sync');
    expect((await mcpToolCall(a)).status).toBe(429);
  });

  it('MCP tools/list is inside the API rate limit (429 with Retry-After when the api bucket is empty)', async () => {
    const a = await freshAccount(simple);
    const list = () => a.call('POST', `/api/mcp/${a.workspaceId}`, { jsonrpc: '2.0', id: 1, method: 'tools/list' }, { accept: 'application/json, text/event-stream' });
    expect((await list()).status).toBe(200);
    for (let i = 0; i < 100; i++) {
      try {
        await limits().admitApi(a.account, a.plan);
      } catch (err) {
        if (err instanceof HttpError && err.status === 429) break;
        throw err;
      }
    }
    const refused = await list();
    expect(refused.status).toBe(429);
    expect(refused.headers.get('retry-after')).toMatch(/^[1-9]\d*$/);
  });
});

describe('the usage cap is reserved atomically', () => {
  const cost = async (a: Account) => (await a.call('GET', '/api/users/me/usage-limits')).body.usage.currentPeriodCost as number;
  const reservations = async (a: Account) => {
    const rows = await t.server.ctx.db.query<{ n: number; reserved: string | null }>(
      `SELECT (SELECT count(*)::int FROM usage_reservations WHERE account = $1) AS n,
              (SELECT sum(reserved_usd)::text FROM usage_totals WHERE account = $1) AS reserved`, [a.account]);
    return { count: rows[0].n, reservedUsd: Number(rows[0].reserved ?? 0) };
  };
  const until = async (done: () => Promise<boolean>) => {
    for (let i = 0; !(await done()); i++) {
      if (i > 400) throw new Error('timed out');
      await new Promise((res) => setTimeout(res, 25));
    }
  };

  it('100 concurrent sync executes under a cap of ten base charges: exactly 10 run, the rest get 402', async () => {
    const a = await freshAccount(simple, 'enterprise');
    const answers = await Promise.all(Array.from({ length: 100 }, () => a.call('POST', `/api/workflows/${a.workflowId}/execute`, {})));
    const statuses = answers.map((r) => r.status);
    expect(statuses.filter((s) => s === 200)).toHaveLength(10);
    expect(statuses.filter((s) => s === 402)).toHaveLength(90);
    expect(await cost(a)).toBe(0.05);
    expect(await runCount(a)).toBe(10);
  });

  it('200 concurrent async executes under the same cap: exactly 10 are queued, and they cost the cap', async () => {
    const a = await freshAccount(simple, 'enterprise');
    const answers = await Promise.all(Array.from({ length: 200 }, () => a.call('POST', `/api/workflows/${a.workflowId}/execute`, { async: true })));
    const statuses = answers.map((r) => r.status);
    expect(statuses.filter((s) => s === 202)).toHaveLength(10);
    expect(statuses.filter((s) => s === 402)).toHaveLength(190);
    for (const r of answers.filter((x) => x.status === 202)) {
      for (let i = 0; ; i++) {
        const job = await a.call('GET', `/api/jobs/${r.body.jobId}`);
        if (job.body.status === 'completed') break;
        if (i > 400) throw new Error(`job ${r.body.jobId} is still ${job.body.status}`);
        await new Promise((res) => setTimeout(res, 25));
      }
    }
    expect(await cost(a)).toBe(0.05);
    // Each worker freed its slot; the charges consumed the reservations (nothing is left held against the cap).
    await until(async () => (await reservations(a)).count === 0);
    expect(await reservations(a)).toEqual({ count: 0, reservedUsd: 0 });
  });

  it('finished sync runs leave nothing reserved: each charge consumed its reservation (with or without a caller-chosen id)', async () => {
    const a = await freshAccount(simple, 'enterprise');
    for (let i = 0; i < 3; i++) expect((await a.call('POST', `/api/workflows/${a.workflowId}/execute`, {})).status).toBe(200);
    expect((await a.call('POST', `/api/workflows/${a.workflowId}/execute`, {}, { 'x-execution-id': `mine-${randomUUID()}` })).status).toBe(200);
    // Charges reserved ahead that no run took yet are not the runs' (test/limits/charge-pool.test.ts).
    await limits().returnUnusedCharges();
    expect(await reservations(a)).toEqual({ count: 0, reservedUsd: 0 });
    expect(await cost(a)).toBe(0.02);
  });

  it('an async run paused and resumed leaves nothing reserved (the resume, admitted under no run id, gives its reservation back)', async () => {
    const a = await freshAccount(approval, 'enterprise');
    const queued = await a.call('POST', `/api/workflows/${a.workflowId}/execute`, { async: true });
    expect(queued.status).toBe(202);
    const exec: string = queued.body.executionId;
    await until(async () => (await a.call('GET', `/api/v1/logs/${exec}`)).body.data?.status === 'paused');
    const resumed = await a.call('POST', `/api/resume/${a.workflowId}/${exec}/approval`, { input: { decision: 'yes' } });
    expect(resumed.status).toBe(202);
    await until(async () => (await a.call('GET', `/api/jobs/${resumed.body.jobId}`)).body.status === 'completed');
    // The worker frees the slot after the run's final write; a resume's reservation is not consumed by a charge.
    await until(async () => (await reservations(a)).count === 0);
    expect(await reservations(a)).toEqual({ count: 0, reservedUsd: 0 });
  });

  it('an admission told of another charge than its own still gives its reservation back', async () => {
    const a = await freshAccount(simple, 'enterprise');
    const usageKey = `run:${randomUUID()}`;
    const held = await limits().admitRun(a.account, a.plan, { bucket: 'sync', mode: 'sync', usageKey });
    expect(await reservations(a)).toEqual({ count: 1, reservedUsd: 0.005 });
    held.charged(`run:${randomUUID()}`);
    await held.release();
    expect(await reservations(a)).toEqual({ count: 0, reservedUsd: 0 });
  });

  it('an admission told of its own charge frees only its slot (the charge consumed the reservation)', async () => {
    const a = await freshAccount(simple, 'enterprise');
    const usageKey = `run:${randomUUID()}`;
    const held = await limits().admitRun(a.account, a.plan, { bucket: 'sync', mode: 'sync', usageKey });
    await recordCost(t.server.ctx.db, { account: a.account, amountUsd: 0.005, source: 'run', idempotencyKey: usageKey, at: new Date() });
    expect(await reservations(a)).toEqual({ count: 0, reservedUsd: 0 });
    held.charged(usageKey);
    await held.release();
    expect(await reservations(a)).toEqual({ count: 0, reservedUsd: 0 });
    expect(await cost(a)).toBe(0.005);
  });

  it('a run refused by a later gate gives its reservation back', async () => {
    const a = await freshAccount(simple, 'enterprise');
    const held = await Promise.all(Array.from({ length: 10 }, () => limits().admitRun(a.account, a.plan, { bucket: 'sync', mode: 'sync' })));
    // Ten charges reserved: an eleventh does not fit.
    expect((await a.call('POST', `/api/workflows/${a.workflowId}/execute`, {})).status).toBe(402);
    await Promise.all(held.map((h) => h.release()));
    expect((await a.call('POST', `/api/workflows/${a.workflowId}/execute`, {})).status).toBe(200);
    expect(await cost(a)).toBe(0.005);
  });
});
