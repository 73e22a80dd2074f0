import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BASE_RUN_CHARGE_USD } from '../../src/limits/plans.js';
import { startTestServer, type TestServer } from '../support/harness.js';
import { deploy, fn, start } from '../support/workflows.js';

// Concurrent sync runs share their commits (src/db/group-commit.ts): every run a caller saw complete is
// logged with its own output and charged exactly once.
let t: TestServer;
beforeAll(async () => {
  t = await startTestServer({ env: { WEFT_DEFAULT_PLAN: 'enterprise' } });
});
afterAll(async () => {
  await t?.close();
});

describe('sync runs finishing together', () => {
  it('60 concurrent runs: each answered run is logged with its own input and output and charged once', async () => {
    const id = await deploy(t, 'group', {
      blocks: [start([{ name: 'n', type: 'number' }]), fn('double', 'return { value: <start.n> * 2 }', 'Double')],
      edges: [{ from: 'start', to: 'double' }],
    });
    const before = await t.call('GET', '/api/users/me/usage-limits');
    const runs = await Promise.all(Array.from({ length: 60 }, (_, n) => t.call('POST', `/api/workflows/${id}/execute`, { n })));
    for (const [n, r] of runs.entries()) {
      expect(r.status).toBe(200);
      expect(r.body.output).toEqual({ value: n * 2 });
    }
    const ids = runs.map((r) => r.body.executionId as string);
    expect(new Set(ids).size).toBe(60);

    const logs = await t.call('GET', `/api/v1/logs?workspaceId=${t.workspaceId}&limit=200&details=full`);
    expect(logs.status).toBe(200);
    const mine = (logs.body.data as { executionId: string }[]).filter((l) => ids.includes(l.executionId));
    expect(mine).toHaveLength(60);

    const after = await t.call('GET', '/api/users/me/usage-limits');
    const added = after.body.usage.currentPeriodCost - before.body.usage.currentPeriodCost;
    expect(added).toBeCloseTo(60 * BASE_RUN_CHARGE_USD, 9);

    // Each answer's `limits` counts its own run's charge (the statement that wrote the run returns the
    // total), never more than the period held at the end; the batch written last saw every charge.
    const answered = runs.map((r) => r.body.limits.usage.currentPeriodCost as number);
    for (const cost of answered) {
      expect(cost).toBeGreaterThanOrEqual(before.body.usage.currentPeriodCost + BASE_RUN_CHARGE_USD - 1e-9);
      expect(cost).toBeLessThanOrEqual(after.body.usage.currentPeriodCost + 1e-9);
    }
    expect(Math.max(...answered)).toBeCloseTo(after.body.usage.currentPeriodCost, 9);
  });
});
