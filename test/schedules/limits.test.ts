// Scheduled runs go through the limits like any async run: over the account's async rate, a tick is
// refused (recorded, logged, no run) and the schedule goes on.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestServer } from '../support/harness.js';
import { advance, createWorkflow, eventually, finishedRuns, ManualClock, runsOf, scheduled, startScheduledServer, T0 } from './support.js';

const TEN = 10 * 60_000;
let clock: ManualClock;
let t: TestServer;

beforeAll(async () => {
  clock = new ManualClock(T0 + 30_000);
  // Two async runs a minute (burst: twice the rate) for the default plan.
  t = await startScheduledServer(clock, { env: { WEFT_PLAN_LIMITS: JSON.stringify({ enterprise: { asyncPerMinute: 1 } }) } });
  await t.server.services.scheduler.settled();
});
afterAll(async () => {
  await t?.close();
});

describe('limits', () => {
  it('a tick over the async rate limit is refused and recorded; the schedule goes on', async () => {
    const id = await createWorkflow(t, scheduled({ intervalSeconds: 600 }));
    const first = T0 + TEN;
    for (let k = 0; k < 3; k++) await advance(clock, first + k * TEN - clock.now(), t);
    const runs = await finishedRuns(t, id, 2);
    expect(runs.map((r) => r.input.scheduledAt)).toEqual([new Date(first).toISOString(), new Date(first + TEN).toISOString()]);
    const ticks = await eventually(
      () => t.server.ctx.db.query<{ tick_at: Date; status: string; error: string | null }>('SELECT tick_at, status, error FROM schedule_ticks WHERE workflow_id = $1 ORDER BY tick_at', [id]),
      (rows) => rows.length === 3,
    );
    expect(ticks.map((r) => r.status)).toEqual(['enqueued', 'enqueued', 'refused']);
    expect(ticks[2].error).toMatch(/Rate limit exceeded/);
    // A refusal is not a failed run: the schedule stays enabled with nothing counted.
    const res = await t.call('GET', `/api/v1/workflows/${id}`);
    expect(res.body.data.workflow.schedule).toMatchObject({ enabled: true, consecutiveFailures: 0 });
    expect((await runsOf(t, id)).length).toBe(2);
  });
});
