// Run-log retention (WEFT_LOG_RETENTION_DAYS): finished runs older than the retention lose their rows, and
// with them their traces, step records and stored outputs (docs/architecture.md, "Run-log retention").
// Paused runs stay while a person may still answer them. Usage totals live in the limits area and are
// untouched. Deletes go in small batches, one workspace at a time along the logs index, so no statement
// holds a lock for long and the embedded database's one connection is never kept from other work. Each sweep
// also deletes the step records of runs that ended (they serve only to resume a run that is not over), also
// when the retention keeps everything: they copy every block output of an async run in full.
import type { Database } from '../db/database.js';
import type { Logger } from 'pino';
import { systemClock, type SchedulerClock, type TimerHandle } from '../schedules/clock.js';

export interface RetentionOptions {
  /** Days a finished run is kept; 0 keeps everything. */
  days: number;
  /** Rows deleted per statement. */
  batchSize: number;
  /** How often a sweep runs. */
  intervalMs: number;
  /**
   * Runs after a sweep that deleted rows: the embedded database's VACUUM of the run tables, so the space is
   * reused at once rather than after the next periodic pass (docs/architecture.md, "Run-log retention").
   */
  reclaim?: () => Promise<void>;
  /**
   * Other areas' history that expires, swept on the same timer before the runs (compose.ts wires the audit
   * log's and revoked API keys').
   */
  alsoSweep?: readonly HistorySweep[];
}

/** One area's expiring history: rows older than `days` (0 keeps them all), deleted a batch per statement. */
export interface HistorySweep {
  name: string;
  days: number;
  /** Deletes at most `batchSize` rows older than `cutoff`; how many went. */
  deleteBatch: (cutoff: Date, batchSize: number) => Promise<number>;
}

/** Runs `deleteBatch` until a batch deletes fewer than `batchSize` rows; the total. Each batch is its own statement. */
export async function deleteInBatches(batchSize: number, deleteBatch: () => Promise<number>): Promise<number> {
  let deleted = 0;
  for (;;) {
    const n = await deleteBatch();
    deleted += n;
    if (n < batchSize) return deleted;
  }
}

export const DEFAULT_RETENTION_BATCH = 500;

/** The tables a sweep deletes from: executions and the rows that cascade with them. */
export const RUN_TABLES = ['executions', 'execution_steps', 'paused_executions', 'resume_queue'] as const;

/** VACUUM of the run tables, for PGlite, which has no autovacuum: dead rows become reusable space. */
export function vacuumRunTables(db: Pick<Database, 'exec'>): () => Promise<void> {
  return async () => {
    // One table per statement: VACUUM cannot run in a transaction, and other statements go between them.
    for (const table of RUN_TABLES) await db.exec(`VACUUM ${table}`);
  };
}

/** The workspaces that have runs, read as a loose scan of the logs index (one probe per workspace, not per run). */
const WORKSPACES_WITH_RUNS = `
  WITH RECURSIVE ws AS (
    (SELECT workspace_id FROM executions ORDER BY workspace_id LIMIT 1)
    UNION ALL
    SELECT (SELECT e.workspace_id FROM executions e WHERE e.workspace_id > ws.workspace_id ORDER BY e.workspace_id LIMIT 1)
    FROM ws WHERE ws.workspace_id IS NOT NULL
  )
  SELECT workspace_id::text AS workspace_id FROM ws WHERE workspace_id IS NOT NULL`;

/**
 * One batch of a workspace's expired runs: finished ones, and paused ones whose pause is over (every point
 * answered, or the run failed). Steps, pause records and resume entries go with them (ON DELETE CASCADE).
 */
const DELETE_EXPIRED = `
  WITH gone AS (DELETE FROM executions WHERE id IN (
    SELECT e.id FROM executions e
    WHERE e.workspace_id = $1::uuid AND e.created_at < $2
      AND (e.status IN ('completed', 'failed', 'cancelled')
        OR (e.status = 'paused' AND EXISTS (
          SELECT 1 FROM paused_executions p WHERE p.execution_id = e.id AND p.status IN ('fully_resumed', 'failed'))))
    ORDER BY e.created_at
    LIMIT $3) RETURNING 1)
  SELECT count(*)::int AS n FROM gone`;

/**
 * One batch of step records of runs that ended more than a minute ago (a minute: a run that ended and is read
 * at once, as a finished job, never needs them; paused runs keep theirs). The step table holds only records of
 * runs not over and of runs that ended since the last sweep, so it is scanned, and each run found by its key.
 */
const DELETE_ENDED_STEPS = `
  WITH gone AS (DELETE FROM execution_steps WHERE (execution_id, step_key) IN (
    SELECT s.execution_id, s.step_key FROM execution_steps s JOIN executions e ON e.id = s.execution_id
    WHERE e.status IN ('completed', 'failed', 'cancelled') AND e.ended_at < $1
    LIMIT $2) RETURNING 1)
  SELECT count(*)::int AS n FROM gone`;

/** Step records of a run that ended are kept this long. */
const ENDED_STEPS_KEPT_MS = 60_000;

export class RunRetention {
  private timer?: TimerHandle;
  private running?: Promise<number>;
  private stopped = false;

  /** `clock`: time and timers, the scheduler's (tests hand in a manual one and advance it). */
  constructor(
    private readonly db: Database,
    private readonly opts: RetentionOptions,
    private readonly log: Logger,
    private readonly clock: SchedulerClock = systemClock,
  ) {}

  start(): void {
    if (this.timer) return;
    this.stopped = false;
    this.arm();
  }

  /** One sweep per interval, the next armed once the last has ended (a slow sweep never overlaps itself). */
  private arm(): void {
    this.timer = this.clock.setTimer(this.opts.intervalMs, () => {
      this.sweep()
        .catch((err: unknown) => {
          this.log.warn({ err }, 'run-log retention sweep failed');
          return 0;
        })
        .finally(() => {
          if (!this.stopped) this.arm();
        });
    });
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.timer?.cancel();
    this.timer = undefined;
    await this.running?.catch(() => undefined);
  }

  /** Resolves once the sweep under way, if any, has ended. */
  async settled(): Promise<void> {
    await this.running?.catch(() => undefined);
  }

  /** Deletes every expired run now; returns how many. One sweep at a time. */
  sweep(): Promise<number> {
    this.running ??= this.sweepAll().finally(() => {
      this.running = undefined;
    });
    return this.running;
  }

  private async sweepAll(): Promise<number> {
    for (const other of this.opts.alsoSweep ?? []) {
      if (other.days <= 0) continue;
      const cutoff = new Date(this.clock.now() - other.days * 86_400_000);
      const n = await deleteInBatches(this.opts.batchSize, () => other.deleteBatch(cutoff, this.opts.batchSize));
      if (n > 0) this.log.info({ deleted: n, history: other.name, olderThanDays: other.days }, 'retention removed expired history');
    }
    const steps = await this.deleteEndedSteps();
    if (this.opts.days <= 0) {
      if (steps > 0) await this.opts.reclaim?.();
      return 0;
    }
    const cutoff = new Date(this.clock.now() - this.opts.days * 86_400_000);
    const workspaces = await this.db.query<{ workspace_id: string }>(WORKSPACES_WITH_RUNS);
    let deleted = 0;
    for (const { workspace_id: workspaceId } of workspaces) {
      deleted += await deleteInBatches(this.opts.batchSize, async () =>
        (await this.db.query<{ n: number }>(DELETE_EXPIRED, [workspaceId, cutoff, this.opts.batchSize]))[0].n);
    }
    if (deleted > 0) this.log.info({ deleted, olderThanDays: this.opts.days }, 'run-log retention removed expired runs');
    if (deleted > 0 || steps > 0) await this.opts.reclaim?.();
    return deleted;
  }

  /** Deletes the step records of runs that ended (see DELETE_ENDED_STEPS); returns how many. */
  private async deleteEndedSteps(): Promise<number> {
    const endedBefore = new Date(this.clock.now() - ENDED_STEPS_KEPT_MS);
    return deleteInBatches(this.opts.batchSize, async () =>
      (await this.db.query<{ n: number }>(DELETE_ENDED_STEPS, [endedBefore, this.opts.batchSize]))[0].n);
  }
}
