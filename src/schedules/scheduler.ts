// The scheduler of a worker process: sleeps until the next due tick of any deployed schedule (one timer,
// no polling), then fires it. Any number of processes may run one against the same database; each tick
// fires once across all of them:
//  1. In one transaction the cursor of handled ticks moves past the due ticks (only one process moves
//     it past a given range, and only while the same version is deployed and enabled), and the tick to
//     run is claimed (a schedule_ticks row, INSERT ... ON CONFLICT DO NOTHING).
//  2. After the commit, the claimant admits the run through the limits (rate, usage, concurrency: never
//     inside a transaction, and once per tick) and enqueues it as an async run with trigger `schedule`
//     under an id derived from the workflow and the tick.
//  3. A claimant that died between 1 and 2 leaves its claim's lease to lapse; a resync anywhere takes
//     the claim over and does 2 again (the derived id makes a run that was already queued a conflict,
//     never a second run).
// A periodic resync picks up schedules deployed or undeployed by other processes, takes over lapsed
// claims and counts outcomes that were not counted when their runs finished (a process died between).
import { createHash } from 'node:crypto';
import type { Logger } from 'pino';
import type { AccountsService } from '../accounts/service.js';
import type { Database } from '../db/database.js';
import { HttpError } from '../http/errors.js';
import type { RunContext } from '../runs/run-context.js';
import type { ExecutionService } from '../runs/service.js';
import type { WorkflowService } from '../workflows/service.js';
import type { SchedulerClock, TimerHandle } from './clock.js';
import * as store from './store.js';
import type { ScheduleRow, TickRow } from './store.js';
import { intervalProblem } from './registry.js';
import { decide, tickerFor } from './timing.js';

export interface SchedulerOptions {
  /** How often schedules changed by other processes are read again (default 10 s). */
  resyncMs?: number;
  /**
   * A tick seen more than this after its time was missed (no scheduler ran then, or the database was
   * away); one seen sooner is on time, merely late (default 60 s).
   */
  toleranceMs?: number;
  /** How long a claim may stay unqueued before another process takes it over (default 60 s). */
  leaseMs?: number;
}

export interface SchedulerDeps {
  db: Database;
  log: Logger;
  clock: SchedulerClock;
  workflows: Pick<WorkflowService, 'findInWorkspace'>;
  runs: Pick<ExecutionService, 'admit' | 'enqueue' | 'findRun' | 'baseUrl'>;
  accounts: Pick<AccountsService, 'workspacePlan'>;
  /** The workspace's plan and its minimum time between ticks (a plan changed since the deploy refuses faster ticks). */
  allowedInterval: (workspaceId: string) => Promise<{ plan: string; seconds: number }>;
  /** The current billing period (a refusal over the usage cap is logged once per period). */
  billingPeriod: () => string;
  options?: SchedulerOptions;
}

/** A run that reached a final state (what the run observer reports). */
export interface FinishedRun {
  workflowId: string;
  executionId: string;
  trigger: string;
  status: string;
  error?: string | null;
}

interface Armed {
  row: ScheduleRow & { version_id: string };
  /** The first tick after the cursor (may be past: due now); null when the schedule never fires again. */
  due: number | null;
}

const FINAL = new Set(['completed', 'failed', 'cancelled']);
const PURGE_EVERY_MS = 3_600_000;
const TICK_RETENTION_MS = 7 * 86_400_000;

/** The run id of a workflow's tick: the same in every process, so a tick can never queue two runs. */
export const tickExecutionId = (workflowId: string, tickMs: number) =>
  `schedule-${createHash('sha256').update(`${workflowId}\0${tickMs}`).digest('hex').slice(0, 40)}`;

export class Scheduler {
  private readonly schedules = new Map<string, Armed>();
  private readonly resyncMs: number;
  private readonly toleranceMs: number;
  private readonly leaseMs: number;
  private timer?: TimerHandle;
  private started = false;
  private stopped = false;
  private nextResyncAt = 0;
  private lastPurge = 0;
  private running?: Promise<void>;
  private again = false;
  /** Outcome counts in flight (awaited by `settled`). */
  private readonly counting = new Set<Promise<void>>();
  /** Refusals already logged, by workflow, status and window (see `logRefusal`). */
  private readonly refusalsLogged = new Set<string>();

  constructor(private readonly deps: SchedulerDeps) {
    this.resyncMs = deps.options?.resyncMs ?? 10_000;
    this.toleranceMs = deps.options?.toleranceMs ?? 60_000;
    this.leaseMs = deps.options?.leaseMs ?? 60_000;
  }

  /** Reads the deployed schedules and arms the timer; from then on wakes at each due tick. */
  start(): void {
    if (this.started) return;
    this.started = true;
    this.stopped = false;
    this.nextResyncAt = 0;
    void this.pass();
  }

  /** No more ticks from this process; waits for a pass in progress. */
  async stop(): Promise<void> {
    this.stopped = true;
    this.started = false;
    this.timer?.cancel();
    this.timer = undefined;
    await this.settled();
  }

  /** Resolves once no pass and no outcome count is in progress (tests advance a clock, then wait for this). */
  async settled(): Promise<void> {
    while (this.running || this.counting.size > 0) {
      await this.running;
      await Promise.all([...this.counting]);
    }
  }

  /** Reads every schedule again at the next pass (and runs it now). */
  resync(): Promise<void> {
    this.nextResyncAt = 0;
    return this.pass();
  }

  /** A deploy, undeploy or rollback in this process (inside its transaction): re-arm at once. */
  changed(workflowId: string, row: ScheduleRow | null): void {
    if (row && row.version_id !== null && row.enabled) this.schedules.set(workflowId, this.armed(row as Armed['row']));
    else this.schedules.delete(workflowId);
    if (this.started && !this.stopped && !this.running) this.arm();
  }

  /** The run observer's report of a finished run: a scheduled run's outcome is counted at once. */
  runFinished(e: FinishedRun): void {
    if (e.trigger !== 'schedule' || !FINAL.has(e.status)) return;
    const p = this.count(e.workflowId, e.executionId, e.status, e.error ?? null)
      .catch((err: unknown) => this.deps.log.warn({ err, executionId: e.executionId }, 'counting a scheduled run failed; the resync counts it'))
      .finally(() => this.counting.delete(p));
    this.counting.add(p);
  }

  private armed(row: Armed['row']): Armed {
    return { row, due: tickerFor(row.config).next(row.cursor_at.getTime()) };
  }

  /** One pass at a time; a wake during a pass runs another right after it. */
  private pass(): Promise<void> {
    if (this.running) {
      this.again = true;
      return this.running;
    }
    this.running = (async () => {
      do {
        this.again = false;
        await this.once().catch((err: unknown) => this.deps.log.error({ err }, 'scheduler pass failed'));
      } while (this.again && !this.stopped);
    })().finally(() => {
      this.running = undefined;
      this.arm();
    });
    return this.running;
  }

  private async once(): Promise<void> {
    if (this.stopped) return;
    if (this.deps.clock.now() >= this.nextResyncAt) {
      try {
        await this.reload();
        this.nextResyncAt = this.deps.clock.now() + this.resyncMs;
      } catch (err) {
        // The database is away: try again soon, firing nothing meanwhile (the cursor keeps the ticks).
        this.nextResyncAt = this.deps.clock.now() + Math.min(this.resyncMs, 5_000);
        throw err;
      }
    }
    const now = this.deps.clock.now();
    const due = [...this.schedules.values()].filter((s) => s.due !== null && s.due <= now);
    // From a random place in the list: schedulers of several processes due at the same instant (midnight)
    // mostly handle different schedules instead of queueing behind each other's row locks.
    const from = Math.floor(Math.random() * due.length);
    for (const s of [...due.slice(from), ...due.slice(0, from)]) {
      if (this.stopped) return;
      await this.handle(s, now).catch((err: unknown) => {
        this.deps.log.error({ err, workflowId: s.row.workflow_id }, 'firing a schedule failed');
        // Not again at once (the database may be away): after a pause, or at the next resync.
        if (s.due !== null && s.due <= now) s.due = now + Math.min(this.resyncMs, 5_000);
      });
    }
  }

  private async reload(): Promise<void> {
    const rows = await store.active(this.deps.db);
    this.schedules.clear();
    for (const r of rows) this.schedules.set(r.workflow_id, this.armed(r as Armed['row']));
    const now = this.deps.clock.now();
    const lapsed = await store.takeLapsedClaims(this.deps.db, new Date(now), new Date(now + this.leaseMs));
    for (const t of lapsed) await this.startRun(t);
    await this.countUncounted();
    if (now - this.lastPurge > PURGE_EVERY_MS) {
      this.lastPurge = now;
      // Ticks behind every cursor can never be claimed again: their settled claims are kept a week.
      await store.purgeSettled(this.deps.db, new Date(now - TICK_RETENTION_MS));
    }
  }

  /** Moves a schedule's cursor past its due ticks and fires what the missed-run policy says. */
  private async handle(s: Armed, now: number): Promise<void> {
    const { row } = s;
    const missed = (tick: number) => now - tick > this.toleranceMs;
    const d = decide(tickerFor(row.config), row.config.missedRuns, row.cursor_at.getTime(), now, missed);
    if (!d) {
      s.due = tickerFor(row.config).next(Math.max(row.cursor_at.getTime(), now));
      return;
    }
    const cursor = new Date(d.cursor);
    const claim = d.fire && {
      workflowId: row.workflow_id, tickAt: new Date(d.fire.tick), workspaceId: row.workspace_id, versionId: row.version_id,
      missedTicks: d.fire.missedTicks, leaseUntil: new Date(now + this.leaseMs),
    };
    const outcome = await this.deps.db.tx(async (q) => {
      if (!(await store.advanceCursor(q, row.workflow_id, row.version_id, row.cursor_at, cursor))) return 'moved' as const;
      if (claim && (await store.claimTick(q, claim))) return 'claimed' as const;
      return 'handled' as const;
    });
    if (outcome === 'moved') {
      // Another process handled these ticks, or the schedule changed (redeployed, undeployed, disabled).
      await this.refresh(row.workflow_id);
      return;
    }
    // Unless this process changed it meanwhile (an undeploy or a redeploy re-armed it already).
    if (this.schedules.get(row.workflow_id) === s) this.schedules.set(row.workflow_id, this.armed({ ...row, cursor_at: cursor }));
    if (outcome === 'claimed' && claim) {
      if (d.fire && d.fire.missedTicks > 0) this.deps.log.info({ workflowId: row.workflow_id, missedTicks: d.fire.missedTicks }, 'schedule: one run for missed ticks');
      await this.startRun({ workflow_id: claim.workflowId, tick_at: claim.tickAt, workspace_id: claim.workspaceId, version_id: claim.versionId, missed_ticks: claim.missedTicks });
    } else if (!d.fire) {
      this.deps.log.info({ workflowId: row.workflow_id, until: cursor.toISOString() }, 'schedule: skipped missed ticks');
    }
  }

  private async refresh(workflowId: string): Promise<void> {
    const rows = await store.deployedFor(this.deps.db, [workflowId]);
    const row = rows[0];
    this.changed(workflowId, row ?? null);
  }

  /** Admits and enqueues the run of a claimed tick (the claimant's, or a takeover's). */
  private async startRun(t: Pick<TickRow, 'workflow_id' | 'tick_at' | 'workspace_id' | 'version_id' | 'missed_ticks'>): Promise<void> {
    const { db, runs } = this.deps;
    const executionId = tickExecutionId(t.workflow_id, t.tick_at.getTime());
    try {
      const workflow = await this.deps.workflows.findInWorkspace(t.workspace_id, t.workflow_id);
      if (!workflow?.active_version_id) throw new HttpError(403, 'Workflow is not deployed');
      // Checked again at each tick: the workspace's plan may have changed since the deploy.
      const armed = this.schedules.get(t.workflow_id);
      const tooOften = armed && intervalProblem(armed.row.config, await this.deps.allowedInterval(t.workspace_id), this.deps.clock.now());
      if (tooOften) throw new HttpError(400, `Schedule block "${armed.row.block_id}" ${tooOften.message}`);
      const plan = await this.deps.accounts.workspacePlan(t.workspace_id);
      const run: RunContext = { workspaceId: t.workspace_id, billedAccount: `workspace:${t.workspace_id}`, plan };
      // Limits as for any async run: the account's rate bucket, usage cap and concurrency.
      const admitted = await runs.admit(workflow, run, 'async', { executionId });
      const input = { scheduledAt: t.tick_at.toISOString(), missedTicks: t.missed_ticks };
      try {
        await runs.enqueue(admitted, run, input, { executionId, apiKeyId: null, trigger: 'schedule', baseUrl: runs.baseUrl() });
      } catch (err) {
        // A takeover finds the run its first claimant queued: that run is the tick's.
        if (!(err instanceof HttpError && err.status === 409)) throw err;
      }
      await store.markEnqueued(db, t.workflow_id, t.tick_at, executionId);
    } catch (err) {
      if (err instanceof HttpError) {
        // Refused (rate, usage or concurrency limit; not deployed any more): this tick does not run.
        this.logRefusal(t.workflow_id, t.tick_at, err);
        await store.markRefused(db, t.workflow_id, t.tick_at, err.message);
        return;
      }
      // Anything else (the database away): the claim's lease lapses and a resync takes it over.
      throw err;
    }
  }

  /**
   * A refused tick is recorded on its claim every time, but logged as a warning once per window: over the
   * usage cap once per billing period (every tick until the period ends would be refused the same way),
   * other refusals once an hour per workflow and status. The rest go to the debug level.
   */
  private logRefusal(workflowId: string, tick: Date, err: HttpError): void {
    const window = err.status === 402 ? this.deps.billingPeriod() : String(Math.floor(this.deps.clock.now() / 3_600_000));
    const key = `${workflowId}\0${err.status}\0${window}`;
    const fields = { workflowId, tick: tick.toISOString(), status: err.status, error: err.message };
    if (this.refusalsLogged.has(key)) {
      this.deps.log.debug(fields, 'scheduled run refused (already logged in this window)');
      return;
    }
    if (this.refusalsLogged.size >= 10_000) this.refusalsLogged.clear();
    this.refusalsLogged.add(key);
    this.deps.log.warn({ ...fields, ...(err.status === 402 ? { loggedOncePer: 'billing period' } : { loggedOncePer: 'hour' }) }, 'scheduled run refused');
  }

  private async count(workflowId: string, executionId: string, status: string, error: string | null): Promise<void> {
    const row = await this.deps.db.tx((q) => store.countOutcome(q, {
      workflowId, executionId, outcome: status, effect: status === 'completed' ? 'success' : status === 'failed' ? 'failure' : 'none',
      error, now: new Date(this.deps.clock.now()),
    }));
    if (row && !row.enabled && row.disabled_reason) {
      this.deps.log.warn({ workflowId, reason: row.disabled_reason }, 'schedule disabled after consecutive failed runs');
      this.changed(workflowId, row);
    }
  }

  /** Outcomes of finished runs that were not counted when they finished (their process died between). */
  private async countUncounted(): Promise<void> {
    for (const t of await store.uncounted(this.deps.db, 100)) {
      if (!t.execution_id) continue;
      const run = await this.deps.runs.findRun(t.workspace_id, t.workflow_id, t.execution_id);
      if (run && FINAL.has(run.status)) await this.count(t.workflow_id, t.execution_id, run.status, run.error);
    }
  }

  /** One timer: the earliest due tick or the next resync, whichever comes first. */
  private arm(): void {
    this.timer?.cancel();
    this.timer = undefined;
    if (!this.started || this.stopped) return;
    let at = this.nextResyncAt;
    for (const s of this.schedules.values()) if (s.due !== null && s.due < at) at = s.due;
    this.timer = this.deps.clock.setTimer(at - this.deps.clock.now(), () => {
      this.timer = undefined;
      void this.pass();
    });
  }
}
