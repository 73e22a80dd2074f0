// Each tick fires once however many schedulers run against one database. On PostgreSQL: two servers
// (an API+worker and a second worker) on the same database, waking at the same instants of one clock.
// On PGlite (one process holds the data directory): two more scheduler instances beside the server's.
// And a claim whose process died before its run was queued is taken over, still once.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Scheduler, tickExecutionId } from '../../src/schedules/scheduler.js';
import { dbMode, type TestServer } from '../support/harness.js';
import { advance, createWorkflow, eventually, finishedRuns, ManualClock, runsOf, scheduled, startScheduledServer, T0, type Where } from './support.js';

const TEN = 10 * 60_000;

let clock: ManualClock;
let a: TestServer & { where: Where };
let b: (TestServer & { where: Where }) | undefined;
/** Every scheduler on the database, the server's first. */
let schedulers: Scheduler[];
const extra: Scheduler[] = [];

beforeAll(async () => {
  clock = new ManualClock(T0 + 30_000);
  a = await startScheduledServer(clock);
  if (dbMode() === 'postgres') {
    b = await startScheduledServer(clock, { where: a.where, role: 'worker' });
    schedulers = [a.server.services.scheduler, b.server.services.scheduler];
  } else {
    const { services, ctx } = a.server;
    for (let i = 0; i < 2; i++) {
      extra.push(new Scheduler({
        db: ctx.db, log: ctx.log, clock, workflows: services.workflows, runs: services.runs, accounts: services.accounts,
        allowedInterval: (ws) => services.scheduleRegistry.allowedInterval(ws), billingPeriod: () => services.limits.usage.period(),
      }));
    }
    schedulers = [services.scheduler, ...extra];
  }
  for (const s of extra) s.start();
  for (const s of schedulers) await s.settled();
});
afterAll(async () => {
  for (const s of extra) await s.stop();
  await b?.close();
  await a?.close();
});

const settleAll = async () => {
  await new Promise((r) => setImmediate(r));
  for (const s of schedulers) await s.settled();
};

describe('exactly once', () => {
  it('every scheduler wakes at each tick; each tick runs once', async () => {
    const id = await createWorkflow(a, scheduled({ intervalSeconds: 600 }));
    // The others learn of a deploy in another process at their resync; here at once.
    for (const s of schedulers) await s.resync();
    const first = Math.ceil(clock.now() / TEN) * TEN;
    const ticks = 5;
    for (let k = 0; k < ticks; k++) {
      await advance(clock, first + k * TEN - clock.now());
      await settleAll();
    }
    const runs = await finishedRuns(a, id, ticks);
    expect(runs.map((r) => r.input.scheduledAt)).toEqual([...Array(ticks).keys()].map((k) => new Date(first + k * TEN).toISOString()));
    expect(runs.every((r) => r.status === 'completed' && r.trigger === 'schedule')).toBe(true);
    const claims = await a.server.ctx.db.query<{ n: number }>('SELECT count(*)::int AS n FROM schedule_ticks WHERE workflow_id = $1', [id]);
    expect(claims[0].n).toBe(ticks);
    await a.call('DELETE', `/api/v1/workflows/${id}/deploy`);
  });

  it('a claim left by a process that died before queueing its run is taken over once its lease lapsed, and runs once', async () => {
    const id = await createWorkflow(a, scheduled({ intervalSeconds: 600 }));
    const version = (await a.server.ctx.db.query<{ version_id: string }>('SELECT version_id FROM schedules WHERE workflow_id = $1', [id]))[0].version_id;
    const tick = Math.ceil(clock.now() / TEN) * TEN;
    // What a claimant that died right after its claim committed leaves behind: the cursor moved, the claim, no run.
    await a.server.ctx.db.tx(async (q) => {
      await q.query('UPDATE schedules SET cursor_at = $2 WHERE workflow_id = $1', [id, new Date(tick)]);
      await q.query(
        `INSERT INTO schedule_ticks (workflow_id, tick_at, workspace_id, version_id, status, lease_until) VALUES ($1, $2, $3, $4, 'claimed', $5)`,
        [id, new Date(tick), a.workspaceId, version, new Date(tick + 60_000)],
      );
    });
    for (const s of schedulers) await s.resync();
    expect(await runsOf(a, id)).toEqual([]); // the lease has not lapsed yet

    await advance(clock, tick + 61_000 - clock.now());
    for (const s of schedulers) await s.resync();
    const runs = await finishedRuns(a, id, 1);
    expect(runs[0].id.startsWith(tickExecutionId(id, tick))).toBe(true);
    expect(runs[0].input.scheduledAt).toBe(new Date(tick).toISOString());
    const claim = await eventually(
      () => a.server.ctx.db.query<{ status: string; outcome: string | null }>('SELECT status, outcome FROM schedule_ticks WHERE workflow_id = $1', [id]),
      (rows) => rows[0]?.outcome !== null,
    );
    expect(claim).toEqual([{ status: 'enqueued', outcome: 'completed' }]);
    await a.call('DELETE', `/api/v1/workflows/${id}/deploy`);
  });
});
