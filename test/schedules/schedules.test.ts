// Schedule triggers over HTTP with an injected clock (no sleeps: the tests move time): validation on
// save, next run times in the workflow's API data, firing at each tick as async runs with trigger
// `schedule`, undeploy stopping it at once, missed ticks under both policies (the scheduler stopped,
// and a real restart), and the schedule disabling itself after consecutive failures.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestServer } from '../support/harness.js';
import {
  advance, createWorkflow, deploy, finishedRuns, eventually, ManualClock, runsOf, scheduled, scheduleBlock, scheduleOf,
  startScheduledServer, T0, type Where,
} from './support.js';

const MIN = 60_000;
const TEN = 10 * MIN;
const iso = (ms: number) => new Date(ms).toISOString();

let clock: ManualClock;
let t: TestServer & { where: Where };

beforeAll(async () => {
  clock = new ManualClock(T0 + 30_000);
  t = await startScheduledServer(clock);
  await t.server.services.scheduler.settled();
});
afterAll(async () => {
  await t?.close();
});

const ticksOf = (workflowId: string) =>
  t.server.ctx.db.query<{ tick_at: Date; status: string }>('SELECT tick_at, status FROM schedule_ticks WHERE workflow_id = $1 ORDER BY tick_at', [workflowId]);

describe('schedule block validation', () => {
  const create = (config: Record<string, unknown>, extra: unknown[] = []) =>
    t.call('POST', '/api/v1/workflows', { workspaceId: t.workspaceId, name: `bad-${Math.random()}`, definition: { blocks: [scheduleBlock(config), ...extra], edges: [] } });

  it('answers 400 naming the block and field', async () => {
    const cases: [Record<string, unknown>, string, RegExp][] = [
      [{}, 'config.cron', /exactly one of cron and intervalSeconds/],
      [{ cron: '* * * * *', intervalSeconds: 60 }, 'config.intervalSeconds', /exactly one of cron and intervalSeconds/],
      [{ cron: '61 * * * *' }, 'config.cron', /invalid cron expression "61 \* \* \* \*".*minute/],
      [{ cron: '* * * *' }, 'config.cron', /five fields, or six with seconds first; got 4/],
      [{ cron: '0 0 0 * * * *' }, 'config.cron', /got 7/],
      [{ cron: '0 9 * * *', timezone: 'Mars/Base' }, 'config.timezone', /unknown IANA time zone "Mars\/Base"/],
      [{ intervalSeconds: 60, timezone: 'UTC' }, 'config.timezone', /cron schedules only/],
      [{ intervalSeconds: 0 }, 'config.intervalSeconds', /./],
      [{ intervalSeconds: 1.5 }, 'config.intervalSeconds', /./],
      [{ intervalSeconds: 60, missedRuns: 'sometimes' }, 'config.missedRuns', /./],
      [{ intervalSeconds: 60, maxConsecutiveFailures: 0 }, 'config.maxConsecutiveFailures', /./],
      [{ intervalSeconds: 60, every: 5 }, 'config', /every/],
    ];
    for (const [config, field, message] of cases) {
      const res = await create(config);
      expect(res.status, JSON.stringify(config)).toBe(400);
      expect(res.body.error).toMatch(/^Invalid workflow definition: Block "Schedule" \(sched\)/);
      const detail = res.body.details.find((d: any) => d.blockId === 'sched');
      expect(detail, JSON.stringify(res.body)).toBeDefined();
      expect(detail.field.startsWith(field), `${JSON.stringify(config)}: ${detail.field}`).toBe(true);
      expect(detail.message, JSON.stringify(config)).toMatch(message);
    }
    // One schedule per workflow, at the top level.
    const two = await create({ intervalSeconds: 60 }, [{ ...scheduleBlock({ intervalSeconds: 120 }), id: 'sched2', name: 'Other' }]);
    expect(two.status).toBe(400);
    expect(two.body.error).toMatch(/exactly one schedule block; found 2/);
  });

  it('checks a replaced draft too, and a block named like the trigger is reserved', async () => {
    const id = await createWorkflow(t, scheduled({ intervalSeconds: 600 }), { deploy: false });
    const bad = await t.call('PUT', `/api/v1/workflows/${id}`, { definition: scheduled({ cron: '0 25 * * *' }) });
    expect(bad.status).toBe(400);
    expect(bad.body.details[0]).toMatchObject({ blockId: 'sched', field: 'config.cron' });
    const named = await t.call('POST', '/api/v1/workflows', {
      workspaceId: t.workspaceId, name: `named-${Math.random()}`,
      definition: { blocks: [{ id: 's', type: 'start', name: 'Start', config: {} }, { id: 'f', type: 'function', name: 'schedule', config: { code: 'return 1' } }], edges: [{ from: 's', to: 'f' }] },
    });
    expect(named.status).toBe(400);
    expect(named.body.error).toMatch(/name "schedule" is reserved/);
  });
});

describe('firing', () => {
  it('shows the next run times, fires once per tick as an async run with trigger schedule, and stops at once on undeploy', async () => {
    const id = await createWorkflow(t, scheduled({ intervalSeconds: 600 }));
    const first = T0 + TEN;
    expect(await scheduleOf(t, id)).toEqual({
      nextRunAt: [0, 1, 2, 3, 4].map((i) => iso(first + i * TEN)), enabled: true, disabledReason: null, consecutiveFailures: 0,
    });
    // The list carries it too.
    const list = await t.call('GET', `/api/v1/workflows?workspaceId=${t.workspaceId}&limit=100`);
    expect(list.body.data.find((w: any) => w.id === id).schedule.nextRunAt[0]).toBe(iso(first));

    // Just before the tick nothing fires; at the tick one run.
    await advance(clock, first - 1 - clock.now(), t);
    expect(await ticksOf(id)).toEqual([]);
    await advance(clock, 1, t);
    let runs = await finishedRuns(t, id, 1);
    expect(runs[0]).toMatchObject({ status: 'completed', trigger: 'schedule', input: { scheduledAt: iso(first), missedTicks: 0 } });
    expect(runs[0].output).toEqual({ at: iso(first), missed: 0 });
    // A run like any async run: its id, charged to the workspace.
    const charges = await t.server.services.limits.runCharges([runs[0].id]);
    expect(charges.get(runs[0].id)).toBeGreaterThan(0);
    expect((await scheduleOf(t, id)).nextRunAt[0]).toBe(iso(first + TEN));

    await advance(clock, TEN, t);
    runs = await finishedRuns(t, id, 2);
    expect(runs.map((r) => r.input.scheduledAt)).toEqual([iso(first), iso(first + TEN)]);

    // Undeploy: no schedule in the API data, nothing fires any more.
    expect((await t.call('DELETE', `/api/v1/workflows/${id}/deploy`)).status).toBe(200);
    expect(await scheduleOf(t, id)).toBeUndefined();
    await advance(clock, 3 * TEN, t);
    expect((await runsOf(t, id)).length).toBe(2);
    expect((await ticksOf(id)).length).toBe(2);
  });

  it('reads cron expressions in their time zone, and a run enters at the schedule block beside a start block', async () => {
    // Weekdays at 09:00 in New York: 2030-01-01 is a Tuesday, 09:00 EST is 14:00 UTC.
    const cron = await createWorkflow(t, scheduled({ cron: '0 9 * * 1-5', timezone: 'America/New_York' }));
    expect((await scheduleOf(t, cron)).nextRunAt.slice(0, 3)).toEqual(['2030-01-01T14:00:00.000Z', '2030-01-02T14:00:00.000Z', '2030-01-03T14:00:00.000Z']);
    await t.call('DELETE', `/api/v1/workflows/${cron}/deploy`);

    // Six fields: seconds first.
    const both = await createWorkflow(t, {
      blocks: [
        { id: 'start', type: 'start', name: 'Start', config: { inputFormat: [{ name: 'x', type: 'string', required: true }] } },
        scheduleBlock({ cron: '30 */10 * * * *' }),
        { id: 'f', type: 'function', name: 'f', config: { code: 'return { at: <schedule.scheduledAt> }' } },
      ],
      edges: [{ from: 'start', to: 'f' }, { from: 'sched', to: 'f' }],
    });
    const next = (await scheduleOf(t, both)).nextRunAt[0];
    expect(new Date(next).getUTCSeconds()).toBe(30);
    await advance(clock, new Date(next).getTime() - clock.now(), t);
    const runs = await finishedRuns(t, both, 1);
    // The start block's required field is not asked of a scheduled run.
    expect(runs[0]).toMatchObject({ status: 'completed', output: { at: next } });
    await t.call('DELETE', `/api/v1/workflows/${both}/deploy`);
  });
});

describe('missed ticks', () => {
  it('skip: ticks that passed while the scheduler was stopped are dropped; it goes on with the next one', async () => {
    const id = await createWorkflow(t, scheduled({ intervalSeconds: 600, missedRuns: 'skip' }));
    const scheduler = t.server.services.scheduler;
    const next = new Date((await scheduleOf(t, id)).nextRunAt[0]).getTime();
    await advance(clock, next - clock.now(), t);
    await finishedRuns(t, id, 1);

    await scheduler.stop();
    clock.advance(3 * TEN + 5 * MIN); // three ticks pass, the last 5 minutes ago
    scheduler.start();
    await scheduler.settled();
    expect((await runsOf(t, id)).length).toBe(1);
    expect((await scheduleOf(t, id)).nextRunAt[0]).toBe(iso(next + 4 * TEN));

    await advance(clock, next + 4 * TEN - clock.now(), t);
    const runs = await finishedRuns(t, id, 2);
    expect(runs[1].input).toEqual({ scheduledAt: iso(next + 4 * TEN), missedTicks: 0 });
    await t.call('DELETE', `/api/v1/workflows/${id}/deploy`);
  });

  it('runOnce: one run for all the ticks missed while no server ran (a real restart), then on as before', async () => {
    const id = await createWorkflow(t, scheduled({ intervalSeconds: 600, missedRuns: 'runOnce' }));
    const next = new Date((await scheduleOf(t, id)).nextRunAt[0]).getTime();
    await advance(clock, next - clock.now(), t);
    await finishedRuns(t, id, 1);

    await t.close();
    clock.advance(3 * TEN + 5 * MIN);
    t = await startScheduledServer(clock, { where: t.where });
    await t.server.services.scheduler.settled();
    let runs = await finishedRuns(t, id, 2);
    expect(runs[1].input).toEqual({ scheduledAt: iso(next + 3 * TEN), missedTicks: 3 });
    expect(runs[1].output).toEqual({ at: iso(next + 3 * TEN), missed: 3 });

    await advance(clock, next + 4 * TEN - clock.now(), t);
    runs = await finishedRuns(t, id, 3);
    expect(runs[2].input).toEqual({ scheduledAt: iso(next + 4 * TEN), missedTicks: 0 });
    await t.call('DELETE', `/api/v1/workflows/${id}/deploy`);
  });
});

describe('consecutive failures', () => {
  it('disables the schedule after maxConsecutiveFailures failed runs in a row (a success resets the count); a redeploy enables it', async () => {
    // Deployed at `base`: tick k is at base + k * 10 min. Tick 3 succeeds, every other one fails.
    const base = Math.floor(clock.now() / TEN) * TEN;
    const code = `const k = Math.round((new Date(<schedule.scheduledAt>).getTime() - ${base}) / ${TEN}); if (k === 3) return { k }; throw new Error('boom ' + k);`;
    const id = await createWorkflow(t, scheduled({ intervalSeconds: 600, maxConsecutiveFailures: 3 }, code));
    const failuresAfter = [1, 2, 0, 1, 2, 3];
    for (let k = 1; k <= 6; k++) {
      await advance(clock, base + k * TEN - clock.now(), t);
      await finishedRuns(t, id, k);
      await eventually(() => scheduleOf(t, id), (s) => s.consecutiveFailures === failuresAfter[k - 1]);
    }
    const disabled = await scheduleOf(t, id);
    expect(disabled.enabled).toBe(false);
    expect(disabled.nextRunAt).toEqual([]);
    expect(disabled.disabledReason).toMatch(/^Disabled after 3 consecutive failed runs \(maxConsecutiveFailures\); the last one failed: .*boom 6.*Redeploy/);
    expect((await runsOf(t, id)).map((r) => r.status)).toEqual(['failed', 'failed', 'completed', 'failed', 'failed', 'failed']);

    await advance(clock, 2 * TEN, t);
    expect((await runsOf(t, id)).length).toBe(6);

    await deploy(t, id);
    expect(await scheduleOf(t, id)).toMatchObject({ enabled: true, disabledReason: null, consecutiveFailures: 0 });
    await advance(clock, new Date((await scheduleOf(t, id)).nextRunAt[0]).getTime() - clock.now(), t);
    await finishedRuns(t, id, 7);
    await eventually(() => scheduleOf(t, id), (s) => s.consecutiveFailures === 1 && s.enabled === true);
    await t.call('DELETE', `/api/v1/workflows/${id}/deploy`);
  });
});
