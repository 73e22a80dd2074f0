// Schedules under the plans (issue 27 item 14): a minimum interval per plan, refused on save and deploy
// (400 naming the block and the minimum) and at each tick (a plan changed since the deploy); a schedule
// refused over the usage cap is recorded at every tick but logged once per billing period.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestServer } from '../support/harness.js';
import { advance, createWorkflow, eventually, finishedRuns, ManualClock, runsOf, scheduled, startScheduledServer, T0 } from './support.js';

let clock: ManualClock;
let t: TestServer;
// team: no usage allowed at all, so every tick meets the usage cap.
// pro: one run at a time.
const plans = JSON.stringify({ team: { usageLimitUsd: 0 }, pro: { concurrentExecutions: 1 } });

beforeAll(async () => {
  clock = new ManualClock(T0 + 30_000);
  t = await startScheduledServer(clock, { env: { WEFT_PLAN_LIMITS: plans } });
  await t.server.services.scheduler.settled();
});
afterAll(async () => {
  await t?.close();
});

const setPlan = (plan: string) => t.server.services.plans.setPlan(t.workspaceId, plan);
const create = (definition: unknown) => t.call('POST', '/api/v1/workflows', { workspaceId: t.workspaceId, name: `p-${Math.random().toString(36).slice(2)}`, definition });
const ticks = (workflowId: string) =>
  t.server.ctx.db.query<{ status: string; error: string | null }>('SELECT status, error FROM schedule_ticks WHERE workflow_id = $1 ORDER BY tick_at', [workflowId]);

describe('minimum schedule interval per plan', () => {
  it('refuses a schedule faster than the plan allows when it is saved (free: 60 s), naming the block and the minimum', async () => {
    await setPlan('free');
    try {
      for (const config of [{ intervalSeconds: 1 }, { intervalSeconds: 59 }, { cron: '* * * * * *' }, { cron: '*/30 * * * * *' }]) {
        const r = await create(scheduled(config));
        expect(r.status, JSON.stringify(config)).toBe(400);
        expect(r.body.error).toMatch(/Schedule block "sched" fires every \d+ s; the free plan allows a schedule to fire at most once every 60 s/);
        expect(r.body.details[0]).toMatchObject({ blockId: 'sched', field: config.cron ? 'config.cron' : 'config.intervalSeconds' });
      }
      for (const config of [{ intervalSeconds: 60 }, { cron: '* * * * *' }]) expect((await create(scheduled(config))).status).toBe(201);
      // A faster draft saved under a larger plan is refused when deployed under the smaller one.
      await setPlan('pro');
      const saved = await create(scheduled({ intervalSeconds: 10 }));
      expect(saved.status).toBe(201);
      await setPlan('free');
      const dep = await t.call('POST', `/api/v1/workflows/${saved.body.data.workflow.id}/deploy`);
      expect(dep.status).toBe(400);
      expect(dep.body.error).toMatch(/block "sched" fires every 10 s; the free plan allows .* once every 60 s/);
      expect((await t.call('GET', `/api/v1/workflows/${saved.body.data.workflow.id}`)).body.data.workflow.isDeployed).toBe(false);
    } finally {
      await setPlan('enterprise');
    }
  });

  it('refuses the ticks of a deployed schedule that its workspace\'s plan no longer allows', async () => {
    const id = await createWorkflow(t, scheduled({ intervalSeconds: 10 }));
    await setPlan('pro');
    try {
      await advance(clock, 10_000 - (clock.now() % 10_000), t);
      // Finished, not only started: a run still in flight would hold the pro plan's one slot for the test below.
      await finishedRuns(t, id, 1);
      await setPlan('free');
      await advance(clock, 10_000, t);
      const rows = await eventually(() => ticks(id), (r) => r.length === 2);
      expect(rows[1].status).toBe('refused');
      expect(rows[1].error).toMatch(/fires every 10 s; the free plan allows a schedule to fire at most once every 60 s/);
      expect((await runsOf(t, id)).length).toBe(1);
    } finally {
      expect((await t.call('DELETE', `/api/v1/workflows/${id}/deploy`)).status).toBe(200);
      await setPlan('enterprise');
    }
  });
});

describe('schedules over the usage cap', () => {
  it('records every refused tick but logs the refusal once per billing period', async () => {
    await setPlan('team');
    const log = t.server.ctx.log;
    const warn = log.warn.bind(log);
    const refusals: unknown[] = [];
    let id = '';
    log.warn = ((obj: unknown, ...rest: unknown[]) => {
      if (rest[0] === 'scheduled run refused' && (obj as { workflowId?: string }).workflowId === id) refusals.push(obj);
      return (warn as (...a: unknown[]) => void)(obj, ...rest);
    }) as typeof log.warn;
    try {
      id = await createWorkflow(t, scheduled({ intervalSeconds: 60 }));
      for (let k = 0; k < 3; k++) await advance(clock, 60_000 - (clock.now() % 60_000), t);
      const rows = await eventually(() => ticks(id), (r) => r.length === 3);
      expect(rows.map((r) => r.status)).toEqual(['refused', 'refused', 'refused']);
      expect(rows[0].error).toMatch(/Usage limit exceeded/);
      expect(refusals, JSON.stringify(refusals)).toHaveLength(1);
      expect(refusals[0]).toMatchObject({ workflowId: id, status: 402, loggedOncePer: 'billing period' });
      expect((await t.call('DELETE', `/api/v1/workflows/${id}/deploy`)).status).toBe(200);
    } finally {
      log.warn = warn;
      await setPlan('enterprise');
    }
  });

  it('refuses a tick while every concurrency slot of the account is taken', async () => {
    await setPlan('pro');
    const held = await t.server.services.limits.admitRun(`workspace:${t.workspaceId}`, 'pro', { bucket: 'async', mode: 'async' });
    try {
      const id = await createWorkflow(t, scheduled({ intervalSeconds: 60 }));
      await advance(clock, 60_000 - (clock.now() % 60_000), t);
      const rows = await eventually(() => ticks(id), (r) => r.length === 1);
      expect(rows[0]).toMatchObject({ status: 'refused', error: expect.stringMatching(/Too many concurrent executions/) });
      expect(await runsOf(t, id)).toEqual([]);
      expect((await t.call('DELETE', `/api/v1/workflows/${id}/deploy`)).status).toBe(200);
    } finally {
      await held.release();
      await setPlan('enterprise');
    }
  });
});
