// Usage accounting in O(1) (issue 30): a running total per (billed account, period) kept in the statement
// of every charge, read by admission and the usage reports; `weft usage reconcile` rebuilds it from the
// usage events and reports any difference.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { recordCost } from '../../src/limits/usage.js';
import { runCli } from '../support/cli.js';
import { startTestServer, type TestServer } from '../support/harness.js';
import { deploy, fn, start, waitForJob } from '../support/workflows.js';

let t: TestServer;
const db = () => t.server.ctx.db;
const account = () => `workspace:${t.workspaceId}`;

beforeAll(async () => {
  t = await startTestServer({ env: { WEFT_DEFAULT_PLAN: 'enterprise' } });
});
afterAll(async () => {
  await t?.close();
});

/** `weft usage reconcile` against this test's database: through the server's admin socket (embedded), or directly (PostgreSQL). */
async function reconcile(...flags: string[]) {
  const r = await runCli(['usage', 'reconcile', ...flags, '--json'], { WEFT_DATA_DIR: t.config.dataDir, DATABASE_URL: t.config.databaseUrl });
  expect(r.code, r.stderr).toBe(0);
  return JSON.parse(r.stdout) as { checked: number; fixed: boolean; differences: { account: string; period: string; totalUsd: number; eventsUsd: number }[] };
}

const eventsSum = async () =>
  Number((await db().query<{ s: string }>('SELECT COALESCE(sum(amount_usd), 0)::text AS s FROM usage_events WHERE account = $1', [account()]))[0].s);
const reported = async () => (await t.call('GET', '/api/users/me/usage-limits')).body.usage.currentPeriodCost as number;

describe('usage totals', () => {
  it('follow every kind of charge and agree with the events; reconcile finds nothing to fix', async () => {
    const wf = await deploy(t, 'charged', { blocks: [start(), fn('f', 'return 1')], edges: [{ from: 'start', to: 'f' }] });
    // Sync runs (group-committed with their charges), async runs (charged when the worker ends them),
    // and a cost recorded on its own (as the AI gateway and embeddings do).
    const sync = await Promise.all(Array.from({ length: 3 }, () => t.call('POST', `/api/workflows/${wf}/execute`, {})));
    expect(sync.map((r) => r.status)).toEqual([200, 200, 200]);
    const queued = await Promise.all(Array.from({ length: 2 }, () => t.call('POST', `/api/workflows/${wf}/execute`, { async: true })));
    for (const q of queued) expect((await waitForJob(t, q.body.jobId)).status).toBe('completed');
    await recordCost(db(), { account: account(), amountUsd: 0.000123456, source: 'ai', idempotencyKey: `ai:test-${Date.now()}`, at: new Date() });

    expect(await eventsSum()).toBeCloseTo(0.025123456, 9);
    expect(await reported()).toBe(0.025123456);
    const check = await reconcile('--dry-run');
    expect(check.checked).toBeGreaterThan(0);
    expect(check.differences).toEqual([]);
    expect(check.fixed).toBe(false);
  });

  it('are what admission and the reports read (never a sum of events); reconcile reports a wrong total and rebuilds it', async () => {
    const before = await eventsSum();
    // A total made wrong behind the service's back: the usage report shows the total, not the events' sum.
    await db().query('UPDATE usage_totals SET cost_usd = cost_usd + 1 WHERE account = $1', [account()]);
    expect(await reported()).toBeCloseTo(before + 1, 9);

    const dry = await reconcile('--dry-run');
    expect(dry.differences).toEqual([{ account: account(), period: expect.stringMatching(/^\d{4}-\d{2}-01$/), totalUsd: before + 1, eventsUsd: before }]);
    expect(await reported()).toBeCloseTo(before + 1, 9); // a dry run changes nothing

    const fixed = await reconcile();
    expect(fixed.fixed).toBe(true);
    expect(fixed.differences).toHaveLength(1);
    expect(await reported()).toBe(before);
    expect((await reconcile('--dry-run')).differences).toEqual([]);
  });

  it('drop a removed event with it', async () => {
    const key = `correction-${Date.now()}`;
    await recordCost(db(), { account: account(), amountUsd: 3, source: 'test', idempotencyKey: key, at: new Date() });
    const withIt = await reported();
    await db().query('DELETE FROM usage_events WHERE idempotency_key = $1', [key]);
    expect(await reported()).toBeCloseTo(withIt - 3, 9);
    expect((await reconcile('--dry-run')).differences).toEqual([]);
  });
});
