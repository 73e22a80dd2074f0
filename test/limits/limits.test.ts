import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectDatabase } from '../../src/db/connect.js';
import { createKey, ensureBootstrap } from '../support/accounts.js';
import { dbMode, freshDatabase, request, startTestServer, type TestServer } from '../support/harness.js';
import { freePort, spawnServer } from '../support/cli.js';
import { fn, start } from '../support/workflows.js';

const tiny = JSON.stringify({
  free: { syncPerMinute: 2, asyncPerMinute: 3, apiPerMinute: 50, usageLimitUsd: 1 },
  pro: { syncPerMinute: 2, asyncPerMinute: 3, apiPerMinute: 50, usageLimitUsd: 0.012 },
  team: { concurrentExecutions: 2, storageBytes: 3000 },
});

let t: TestServer;
const clock = () => t.server.services.limits.clock;
const simple = { blocks: [start(), fn('f', 'return 1', 'F')], edges: [{ from: 'start', to: 'f' }] };

beforeAll(async () => {
  t = await startTestServer({ env: { WEFT_DEFAULT_PLAN: 'free', WEFT_PLAN_LIMITS: tiny } });
});
afterAll(async () => {
  await t?.close();
});

/** A fresh workspace key on `plan`, so each test starts with full buckets and no usage. */
async function freshAccount(plan = 'free') {
  const { createWorkspace } = await import('../support/accounts.js');
  const ws = await createWorkspace(t.server.ctx.db, `lim-${Math.random().toString(36).slice(2)}`, t.userId, plan);
  const key = await createKey(t.server.ctx.db, { workspaceId: ws.id, userId: t.userId, type: 'workspace' });
  const call = (method: string, path: string, body?: unknown, headers: Record<string, string> = {}) =>
    request(t.url + path, method, body, { 'x-api-key': key.secret, ...headers });
  const created = await call('POST', '/api/v1/workflows', { workspaceId: ws.id, name: 'w', definition: simple });
  await call('POST', `/api/v1/workflows/${created.body.data.workflow.id}/deploy`);
  return { ws, call, workflowId: created.body.data.workflow.id as string };
}

describe('rate limits', () => {
  it('exhausts the sync bucket (burst = 2 x rate), reports it, and refills a minute later', async () => {
    const a = await freshAccount();
    const exec = () => a.call('POST', `/api/workflows/${a.workflowId}/execute`, {});
    for (let i = 0; i < 4; i++) {
      const r = await exec();
      expect(r.status).toBe(200);
      // The legacy execute path carries no X-RateLimit-* headers (Sim's Python SDK 0.1.x int()s them): the body's limits do.
      expect([...r.headers.keys()].filter((h) => h.startsWith('x-ratelimit-'))).toEqual([]);
      expect(r.body.limits.workflowExecutionRateLimit.sync).toMatchObject({ requestsPerMinute: 2, maxBurst: 4, remaining: 3 - i });
    }
    const refused = await exec();
    expect(refused.status).toBe(429);
    expect(refused.body.error).toMatch(/Rate limit exceeded/);
    expect([...refused.headers.keys()].filter((h) => h.startsWith('x-ratelimit-'))).toEqual([]);
    expect(refused.headers.get('retry-after')).toMatch(/^\d+$/);
    const retry = Number(refused.headers.get('retry-after'));
    expect(retry).toBeGreaterThanOrEqual(1);
    expect(retry).toBeLessThanOrEqual(60);
    // The body agrees with the header: retryAfterSeconds is its figure, retryAfter the refill time (epoch ms)
    // that the usage-limits report gives for the same bucket.
    expect(refused.body.retryAfterSeconds).toBe(retry);
    const report = await a.call('GET', '/api/users/me/usage-limits');
    expect(refused.body.retryAfter).toBe(Date.parse(report.body.rateLimit.sync.resetAt));
    // The async bucket is separate.
    expect((await a.call('POST', `/api/workflows/${a.workflowId}/execute`, { async: true })).status).toBe(202);
    clock().offsetMs += 60_000;
    try {
      expect((await exec()).status).toBe(200);
      expect((await exec()).status).toBe(200);
      expect((await exec()).status).toBe(429);
    } finally {
      clock().offsetMs -= 60_000;
    }
  });

  it('exhausts the async bucket on its own', async () => {
    const a = await freshAccount();
    const codes: number[] = [];
    for (let i = 0; i < 7; i++) codes.push((await a.call('POST', `/api/workflows/${a.workflowId}/execute`, { async: true })).status);
    expect(codes).toEqual([202, 202, 202, 202, 202, 202, 429]);
    expect((await a.call('POST', `/api/workflows/${a.workflowId}/execute`, {})).status).toBe(200);
  });

  it('limits /api/v1 calls with the api bucket and its headers', async () => {
    const s = await startTestServer({ env: { WEFT_DEFAULT_PLAN: 'free', WEFT_PLAN_LIMITS: JSON.stringify({ free: { apiPerMinute: 3 } }) } });
    try {
      const codes: number[] = [];
      let last: any;
      for (let i = 0; i < 7; i++) {
        last = await s.call('GET', `/api/v1/workflows?workspaceId=${s.workspaceId}`);
        codes.push(last.status);
        expect(last.headers.get('x-ratelimit-limit')).toBe('6');
        expect(Date.parse(last.headers.get('x-ratelimit-reset'))).toBeGreaterThan(0);
      }
      expect(codes).toEqual([200, 200, 200, 200, 200, 200, 429]);
      expect(last.body).toMatchObject({ error: 'Rate limit exceeded', message: expect.stringMatching(/retry after/) });
      expect(Number(last.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
      expect(last.body.retryAfterSeconds).toBe(Number(last.headers.get('retry-after')));
      expect(last.body.retryAfter).toBe(Date.parse(last.headers.get('x-ratelimit-reset')));
      s.server.services.limits.clock.offsetMs += 60_000;
      expect((await s.call('GET', `/api/v1/workflows?workspaceId=${s.workspaceId}`)).status).toBe(200);
    } finally {
      await s.close();
    }
  });
});

describe('usage', () => {
  it('reports the exact usage-limits shape', async () => {
    const a = await freshAccount('pro');
    await a.call('POST', `/api/workflows/${a.workflowId}/execute`, {});
    const r = await a.call('GET', '/api/users/me/usage-limits');
    expect(r.status).toBe(200);
    expect(r.body).toEqual({
      success: true,
      rateLimit: {
        sync: { limit: 4, remaining: 3, reset: expect.any(String), requestsPerMinute: 2, maxBurst: 4, resetAt: expect.any(String), isLimited: false },
        async: { limit: 6, remaining: 6, reset: expect.any(String), requestsPerMinute: 3, maxBurst: 6, resetAt: expect.any(String), isLimited: false },
        authType: 'api',
      },
      usage: { currentPeriodCost: 0.005, limit: 0.012, plan: 'pro', isExceeded: false },
      storage: { usedBytes: expect.any(Number), limitBytes: 50 * 1024 ** 3, percentUsed: expect.any(Number) },
    });
    expect((await request(`${t.url}/api/users/me/usage-limits`, 'GET')).status).toBe(401);
  });

  it('refuses a run with 402 when its base charge would take the period cost past the limit, and rolls over monthly', async () => {
    const a = await freshAccount('pro');
    const exec = () => a.call('POST', `/api/workflows/${a.workflowId}/execute`, {});
    expect((await exec()).status).toBe(200);
    const second = await exec();
    expect(second.status).toBe(200);
    expect(second.body.limits.usage).toMatchObject({ currentPeriodCost: 0.01, limit: 0.012, isExceeded: false });
    clock().offsetMs += 60_000; // refill tokens so only the usage cap can refuse
    try {
      // A third run would cost $0.015 in all, past the $0.012 cap: it is refused before it runs.
      const refused = await exec();
      expect(refused.status).toBe(402);
      expect(refused.body.error).toMatch(/Usage limit exceeded/);
      const async = await a.call('POST', `/api/workflows/${a.workflowId}/execute`, { async: true });
      expect(async.status).toBe(402);
      expect((await a.call('GET', '/api/users/me/usage-limits')).body.usage.currentPeriodCost).toBe(0.01);
      clock().offsetMs += 40 * 24 * 3600_000; // next billing period
      expect((await exec()).status).toBe(200);
      expect((await a.call('GET', '/api/users/me/usage-limits')).body.usage.currentPeriodCost).toBe(0.005);
    } finally {
      clock().offsetMs = 0;
    }
  });

  it('ignores a duplicate cost write', async () => {
    const { periodCost, recordCost } = await import('../../src/limits/usage.js');
    const at = new Date();
    const e = { account: 'workspace:dup', amountUsd: 1, source: 'test', idempotencyKey: `k-${Math.random()}`, at };
    expect(await recordCost(t.server.ctx.db, e)).toBe(true);
    expect(await recordCost(t.server.ctx.db, e)).toBe(false);
    expect(await periodCost(t.server.ctx.db, 'workspace:dup', at)).toBe(1);
  });
});

describe('storage', () => {
  it('tracks table bytes and refuses a write past the plan\'s storage, writing nothing', async () => {
    const a = await freshAccount('team');
    const t1 = await a.call('POST', '/api/v1/tables', { workspaceId: a.ws.id, name: 'notes', schema: { columns: [{ name: 'text', type: 'string' }] } });
    expect(t1.status).toBe(200);
    const tableId = t1.body.data.table.id;
    const row = { text: 'x'.repeat(900) };
    let refused: any;
    let accepted = 0;
    for (let i = 0; i < 10 && !refused; i++) {
      const r = await a.call('POST', `/api/v1/tables/${tableId}/rows`, { workspaceId: a.ws.id, data: row });
      if (r.status === 200) accepted++;
      else refused = r;
    }
    expect(accepted).toBeGreaterThan(0);
    expect(refused.status).toBe(403);
    expect(refused.body.error).toMatch(/Storage limit exceeded/);
    const rows = await a.call('GET', `/api/v1/tables/${tableId}/rows?workspaceId=${a.ws.id}`);
    expect(rows.body.data.totalCount).toBe(accepted);
    const usage = await a.call('GET', '/api/users/me/usage-limits');
    expect(usage.body.storage.limitBytes).toBe(3000);
    expect(usage.body.storage.usedBytes).toBeGreaterThan(900 * accepted);
    expect(usage.body.storage.usedBytes).toBeLessThanOrEqual(3000);
    expect(usage.body.storage.percentUsed).toBeCloseTo((usage.body.storage.usedBytes / 3000) * 100, 3);
    // Deleting frees the space again.
    const del = await a.call('DELETE', `/api/v1/tables/${tableId}/rows`, { workspaceId: a.ws.id, rowIds: rows.body.data.rows.map((r: { id: string }) => r.id) });
    expect(del.status).toBe(200);
    expect((await a.call('POST', `/api/v1/tables/${tableId}/rows`, { workspaceId: a.ws.id, data: row })).status).toBe(200);
  });
});

describe('concurrency', () => {
  it('caps running executions per account with 429 and Retry-After', async () => {
    const a = await freshAccount('team');
    const slow = await a.call('POST', '/api/v1/workflows', {
      workspaceId: a.ws.id, name: 'slow', definition: { blocks: [start(), { id: 'w', type: 'wait', name: 'W', config: { seconds: 1 } }], edges: [{ from: 'start', to: 'w' }] },
    });
    const id = slow.body.data.workflow.id;
    await a.call('POST', `/api/v1/workflows/${id}/deploy`);
    const results = await Promise.all([0, 1, 2].map(() => a.call('POST', `/api/workflows/${id}/execute`, {})));
    const codes = results.map((r) => r.status).sort();
    expect(codes).toEqual([200, 200, 429]);
    const refused = results.find((r) => r.status === 429)!;
    expect(refused.headers.get('retry-after')).toBe('5');
    expect(refused.body.code).toBe('EXECUTION_CONCURRENCY_LIMIT');
    // Slots are freed when runs end.
    expect((await a.call('POST', `/api/workflows/${id}/execute`, {})).status).toBe(200);

    // Async runs hold their slot from admission until the job ends.
    const jobs = [await a.call('POST', `/api/workflows/${id}/execute`, { async: true }), await a.call('POST', `/api/workflows/${id}/execute`, { async: true })];
    expect(jobs.map((j) => j.status)).toEqual([202, 202]);
    expect((await a.call('POST', `/api/workflows/${id}/execute`, { async: true })).status).toBe(429);
    for (const j of jobs) {
      for (let i = 0; i < 100; i++) {
        if ((await a.call('GET', `/api/jobs/${j.body.jobId}`)).body.status === 'completed') break;
        await new Promise((r) => setTimeout(r, 50));
      }
    }
    expect((await a.call('POST', `/api/workflows/${id}/execute`, { async: true })).status).toBe(202);
  });
});

describe.runIf(dbMode() === 'postgres' && Boolean(process.env.TEST_REDIS_URL))('two server processes on PostgreSQL and Redis', () => {
  it('share one rate limit', async () => {
    const where = await freshDatabase();
    const db = await connectDatabase({ dataDir: '', databaseUrl: where.databaseUrl });
    const boot = await ensureBootstrap(db, 'free');
    const { secret } = await createKey(db, { workspaceId: boot.workspaceId, userId: boot.userId, type: 'workspace' });
    await db.close();
    const env = { DATABASE_URL: where.databaseUrl, REDIS_URL: process.env.TEST_REDIS_URL, WEFT_DEFAULT_PLAN: 'free', WEFT_PLAN_LIMITS: JSON.stringify({ free: { syncPerMinute: 3, apiPerMinute: 100 } }) };
    const [s1, s2] = [await spawnServer(env, await freePort()), await spawnServer(env, await freePort())];
    try {
      const h = { 'x-api-key': secret };
      const created = await request(`${s1.url}/api/v1/workflows`, 'POST', { workspaceId: boot.workspaceId, name: 'shared', definition: simple }, h);
      const id = created.body.data.workflow.id;
      await request(`${s2.url}/api/v1/workflows/${id}/deploy`, 'POST', undefined, h);
      const codes: number[] = [];
      for (let i = 0; i < 7; i++) codes.push((await request(`${(i % 2 ? s2 : s1).url}/api/workflows/${id}/execute`, 'POST', {}, h)).status);
      expect(codes).toEqual([200, 200, 200, 200, 200, 200, 429]);
    } finally {
      for (const s of [s1, s2]) {
        s.child.kill('SIGTERM');
        await new Promise((r) => s.child.once('exit', r));
      }
    }
  }, 120_000);
});
