// Helpers of the schedule suites: a manual clock the tests advance (no sleeps), servers started with
// it, workflows with a schedule block, and reads of the runs and tick claims they made.
import { loadConfig } from '../../src/config.js';
import type { SchedulerClock, TimerHandle } from '../../src/schedules/clock.js';
import { startServer, type StartOptions } from '../../src/server.js';
import { createKey, ensureBootstrap } from '../support/accounts.js';
import { TEST_ENCRYPTION_KEY } from '../support/cli.js';
import { freshDatabase, request, type TestServer } from '../support/harness.js';
import { runTempDir } from '../support/temp-dirs.js';

/** Time that moves only when told to; due timers fire on `advance` (a timer already due fires on the next turn). */
export class ManualClock implements SchedulerClock {
  private timers = new Set<{ at: number; fn: () => void }>();

  constructor(private t: number) {}

  now(): number {
    return this.t;
  }

  setTimer(ms: number, fn: () => void): TimerHandle {
    const entry = { at: this.t + Math.max(0, ms), fn };
    if (ms <= 0) {
      // Due now: on the next turn of the event loop (not a wait for time to pass).
      let cancelled = false;
      setImmediate(() => {
        if (!cancelled) fn();
      });
      return { cancel: () => { cancelled = true; } };
    }
    this.timers.add(entry);
    return { cancel: () => this.timers.delete(entry) };
  }

  /** Moves time forward and fires every timer that is due by then, earliest first. */
  advance(ms: number): void {
    this.t += ms;
    const due = [...this.timers].filter((e) => e.at <= this.t).sort((a, b) => a.at - b.at);
    for (const e of due) {
      this.timers.delete(e);
      e.fn();
    }
  }

  /** Moves time to an absolute instant (never back). */
  set(ms: number): void {
    if (ms > this.t) this.advance(ms - this.t);
  }
}

/** 2030-01-01T00:00:00Z: a round start, so tick times are easy to read. */
export const T0 = Date.UTC(2030, 0, 1, 0, 0, 0);

export interface Where { dataDir?: string; databaseUrl?: string }

/** A server on `where` (a fresh database by default) whose schedules run on `clock`. */
export async function startScheduledServer(clock: ManualClock, opts: { where?: Where; role?: StartOptions['role']; env?: Record<string, string> } = {}): Promise<TestServer & { where: Where }> {
  const where = opts.where ?? (await freshDatabase());
  const config = loadConfig(
    // The clock starts in 2030 while rows carry today's timestamps: run-log retention (on the same clock) stays off.
    { LOG_LEVEL: 'silent', WEFT_DEFAULT_PLAN: 'enterprise', WEFT_LOG_RETENTION_DAYS: '0', ...(where.databaseUrl ? { WEFT_ENCRYPTION_KEY: TEST_ENCRYPTION_KEY } : {}), ...opts.env },
    {
      port: 0, host: '127.0.0.1',
      dataDir: where.dataDir ?? runTempDir('unused-'),
      databaseUrl: where.databaseUrl,
    },
  );
  const server = await startServer(config, { clock, role: opts.role });
  const boot = await ensureBootstrap(server.ctx.db, config.defaultPlan);
  const { secret } = await createKey(server.ctx.db, { workspaceId: boot.workspaceId, userId: boot.userId, type: 'workspace', name: 'test' });
  const url = server.url;
  return {
    server, url, where, apiKey: secret, workspaceId: boot.workspaceId, userId: boot.userId, config,
    call: (method, p, body, headers = {}) => request(url + p, method, body, { 'x-api-key': secret, ...headers }),
    close: () => server.close(),
  };
}

export const scheduleBlock = (config: Record<string, unknown>) => ({ id: 'sched', type: 'schedule', name: 'Schedule', config });

/** schedule -> function returning the tick (or throwing when `fail`). */
export const scheduled = (config: Record<string, unknown>, code = 'return { at: <schedule.scheduledAt>, missed: <schedule.missedTicks> }') => ({
  blocks: [scheduleBlock(config), { id: 'f', type: 'function', name: 'f', config: { code } }],
  edges: [{ from: 'sched', to: 'f' }],
});

/** Creates (and deploys unless told not to) a workflow; returns its id. */
export async function createWorkflow(t: TestServer, definition: unknown, opts: { deploy?: boolean } = {}): Promise<string> {
  const created = await t.call('POST', '/api/v1/workflows', { workspaceId: t.workspaceId, name: `sch-${Math.random().toString(36).slice(2)}`, definition });
  if (created.status !== 201) throw new Error(`create failed ${created.status}: ${created.text}`);
  const id: string = created.body.data.workflow.id;
  if (opts.deploy !== false) await deploy(t, id);
  return id;
}

export async function deploy(t: TestServer, id: string): Promise<void> {
  const dep = await t.call('POST', `/api/v1/workflows/${id}/deploy`);
  if (dep.status !== 200) throw new Error(`deploy failed ${dep.status}: ${dep.text}`);
}

/** The workflow's `schedule` field of GET /api/v1/workflows/{id}. */
export async function scheduleOf(t: TestServer, id: string): Promise<any> {
  const res = await t.call('GET', `/api/v1/workflows/${id}`);
  if (res.status !== 200) throw new Error(`get failed ${res.status}: ${res.text}`);
  return res.body.data.workflow.schedule;
}

export interface RunRow { id: string; status: string; trigger: string; input: any; output: any; error: string | null }

export function runsOf(t: TestServer, workflowId: string): Promise<RunRow[]> {
  return t.server.ctx.db.query<RunRow>('SELECT id, status, trigger, input, output, error FROM executions WHERE workflow_id = $1 ORDER BY input->>\'scheduledAt\', created_at', [workflowId]);
}

/** Polls (real time, for the async runs to finish) until `check` returns a value; throws with the last one after `timeoutMs`. */
export async function eventually<T>(read: () => Promise<T>, check: (v: T) => boolean, timeoutMs = 20_000): Promise<T> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const v = await read();
    if (check(v)) return v;
    if (Date.now() > until) throw new Error(`condition not reached: ${JSON.stringify(v)}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

/** Waits until the workflow has `n` finished runs (and no unfinished one); returns them. */
export const finishedRuns = (t: TestServer, workflowId: string, n: number) =>
  eventually(() => runsOf(t, workflowId), (rows) => rows.length === n && rows.every((r) => r.status === 'completed' || r.status === 'failed'));

/** Advances the clock and waits for the schedulers' passes it woke (not for the runs). */
export async function advance(clock: ManualClock, ms: number, ...servers: TestServer[]): Promise<void> {
  clock.advance(ms);
  // A timer that was already due fires on the next turn.
  await new Promise((r) => setImmediate(r));
  for (const s of servers) await s.server.services.scheduler.settled();
}
