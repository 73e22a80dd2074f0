import { setMaxListeners } from 'node:events';
import type { Logger } from 'pino';
import type { AccountsService } from '../accounts/service.js';
import type { Config } from '../config.js';
import { isDatabaseUnavailable, retryWhileUnavailable, type Database } from '../db/database.js';
import type { RunResult, RunTree, StepRecord, StepRecording } from '../engine/index.js';
import type { LimitsService } from '../limits/service.js';
import type { RunObserver } from '../observability/observer.js';
import type { JobQueue } from '../queue/port.js';
import type { WorkflowService } from '../workflows/service.js';
import type { InFlightRuns } from './cancel.js';
import { publicExecutionId } from './execution-ids.js';
import { holdLease } from './lease-holder.js';
import type { PauseService } from './pauses.js';
import { finishedFrom } from './run-options.js';
import type { RunContext } from './run-context.js';
import type { RunWrites } from './run-writes.js';
import { StepRecorder } from './step-recorder.js';
import * as store from './store.js';
import type { ExecutionRow, FinishedExecution } from './store.js';

// The life of an async run in the process that holds its lease (docs/architecture.md, Run dispatch and Run
// lifecycle): lease, durable steps, final state with its charge, hand-back at shutdown, takeover after a
// crash, and the job sweep that dispatches what other processes left behind. Kept in one place because its
// rules (who may write the run, when its slot is freed) hold only together. The runs service hands it the
// one engine path and the writes it shares with the sync runs.

/** How the engine runs one run (the runs service's one path for every run). */
export interface ExecuteOptions {
  input: Record<string, unknown>;
  mode: 'sync' | 'async';
  signal: AbortSignal;
  depth?: number;
  /** A child run's: the calling run's tree, whose budgets it shares. */
  tree?: RunTree;
  trigger?: string;
  recorded?: ReadonlyMap<string, StepRecord>;
  onStep?: (s: StepRecord, how: StepRecording) => Promise<void>;
  timeoutMs?: number | null;
}
export type ExecuteRun = (run: RunContext, graph: ReturnType<WorkflowService['compileVersion']>, opts: ExecuteOptions) => Promise<RunResult>;

/** What every part of the runs area is built with (the runs service's dependencies extend it). */
export interface RunsCoreDeps {
  db: Database;
  config: Config;
  log: Logger;
  queue: JobQueue;
  limits: LimitsService;
  accounts: Pick<AccountsService, 'workspacePlan'>;
  workflows: WorkflowService;
  /** Told when async runs start and runs finish (metrics, the run log line, traces). */
  observer?: RunObserver;
}

export interface AsyncRunWorkerDeps extends RunsCoreDeps {
  writes: RunWrites;
  inFlight: InFlightRuns;
  pauses: PauseService;
  execute: ExecuteRun;
  /** The base of links built outside a request (a pause's resume links). */
  baseUrl: () => string;
}

export class AsyncRunWorker {
  private readonly shutdown = new AbortController();
  private sweeper?: NodeJS.Timeout;
  /** A sweep in progress (the next tick skips rather than piling up while the database or Redis is slow). */
  private sweeping = false;

  constructor(private readonly deps: AsyncRunWorkerDeps) {
    // Every run in flight follows the shutdown signal with one listener, removed when the run ends
    // (InFlightRuns.start): up to WEFT_WORKER_CONCURRENCY at once is the design, not a leak, so Node's
    // warning past ten listeners would only alarm operators.
    setMaxListeners(0, this.shutdown.signal);
  }

  /** Shutting down: no run is taken or started in this process any more. */
  get stopping(): boolean {
    return this.shutdown.signal.aborted;
  }

  /**
   * Weft's own reads and writes of an async run (lease, steps, final state) are retried while the
   * database is away, for up to a lease: a dropped connection must not fail the user's run.
   */
  private durable<T>(executionId: string, fn: () => Promise<T>): Promise<T> {
    return retryWhileUnavailable(fn, {
      deadlineMs: this.deps.config.jobLeaseMs,
      onRetry: (err, attempt) => {
        if (attempt === 1) this.deps.log.warn({ err, executionId }, 'database unavailable: retrying a write of the run');
      },
    });
  }

  /** The worker: runs one async job, recording each completed block before its dependants start. */
  async runJob(executionId: string): Promise<void> {
    if (this.shutdown.signal.aborted) return;
    let leased: ExecutionRow | undefined;
    try {
      leased = await this.durable(executionId, () => this.deps.writes.leases.submit(executionId));
    } catch (err) {
      // The row is unchanged (still queued) or its lease lapses: the job sweep dispatches it again.
      this.deps.log.warn({ err, executionId }, 'could not take an async run; the job sweep dispatches it again');
      return;
    }
    if (!leased) return; // finished, or another worker holds it
    return this.runLeased(leased);
  }

  /** Runs an async run whose lease this process holds (taken by `runJob`, or by the statement that accepted it). */
  async runLeased(row: ExecutionRow): Promise<void> {
    const executionId = row.id;
    if (row.attempts === 1 && row.started_at) this.deps.observer?.runStarted({ trigger: row.trigger, waitMs: row.started_at.getTime() - row.created_at.getTime() });
    const tracked = this.deps.inFlight.start(executionId, this.shutdown.signal);
    /** Set when another worker took the run over (this one's lease lapsed): this one stops and writes nothing more. */
    let leaseLost = false;
    const stopLease = await holdLease({
      db: this.deps.db, leaseMs: this.deps.config.jobLeaseMs, log: this.deps.log, executionId,
      alreadyHeld: true, // the statement that leased the run took it
      onCancel: () => this.deps.inFlight.abort(executionId),
      held: {
        attempt: row.attempts,
        onLost: () => {
          leaseLost = true;
          this.deps.log.warn({ executionId, attempt: row.attempts }, 'async run no longer held by this worker (taken over, or ended): it stops and records nothing more');
          this.deps.inFlight.abort(executionId);
        },
      },
    });
    /** Set when a write of the run failed because the database stayed away: the run is left to a takeover. */
    let databaseLost: unknown;
    /** The run was left unfinished for another holder (shutdown or database away): its slot stays taken. */
    let leftUnfinished = false;
    /** Its base charge was written by this worker's final write (which consumed the reservation made under its id). */
    let charged = false;
    const steps = new StepRecorder(row.id,
      (batch) => this.durable(executionId, () => this.deps.writes.steps.submit(batch)),
      (batch) => this.deps.writes.steps.submit(batch));
    try {
      // Cancelled while its previous process ran it: it does not start again.
      if (row.cancel_requested_at) {
        await this.durable(executionId, () => store.finishExecution(this.deps.db, executionId, { ...failure(row, 'Run cancelled'), status: 'cancelled' }));
        return;
      }
      // Each lease of an unfinished run after the first means the process running it stopped mid-run.
      // A run that keeps taking its process down is failed instead of being retried forever.
      const interruptions = row.attempts - 1;
      if (interruptions > this.deps.config.maxJobInterruptions) {
        charged = (await this.finish(row, failure(row, `Interrupted repeatedly: the run was interrupted ${interruptions} times by a stopped or crashed process (limit ${this.deps.config.maxJobInterruptions}, WEFT_MAX_JOB_INTERRUPTIONS)`)))?.charged === true;
        return;
      }
      const recorded = row.attempts > 1 ? await this.durable(executionId, () => store.loadSteps(this.deps.db, row.id)) : new Map<string, StepRecord>();
      const onStep = async (step: StepRecord, how: StepRecording) => {
        try {
          await steps.record(step, how);
        } catch (err) {
          if (isDatabaseUnavailable(err)) {
            // Stop the run: it resumes from its recorded steps once the database is back.
            databaseLost ??= err;
            this.deps.inFlight.abort(executionId);
          }
          throw err;
        }
      };
      if (row.resume_entry_id) {
        const { result, output } = await this.deps.pauses.runEntry(row.resume_entry_id, { signal: tracked.signal, shutdown: this.shutdown.signal, recorded, onStep });
        if (leaseLost) {
          leftUnfinished = true;
          return;
        }
        if (databaseLost) throw databaseLost;
        if (this.shutdown.signal.aborted && result.status === 'cancelled') {
          leftUnfinished = await this.handBack(row, steps);
          return;
        }
        charged = (await this.finish(row, { ...finishedFrom(result), output }))?.charged === true;
        return;
      }
      const version = row.version_id ? await this.durable(executionId, () => this.deps.workflows.loadVersion(row.version_id as string)) : undefined;
      if (!version) throw new Error('The deployed version of this run no longer exists');
      const plan = await this.durable(executionId, () => this.deps.accounts.workspacePlan(row.workspace_id));
      const run: RunContext = { workspaceId: row.workspace_id, billedAccount: row.billed_account, plan, executionId: row.id };
      const result = await this.deps.execute(run, this.deps.workflows.compileVersion(version), {
        input: row.input, mode: 'async', signal: tracked.signal, recorded, onStep, trigger: row.trigger, timeoutMs: row.timeout_ms,
      });
      if (leaseLost) {
        leftUnfinished = true; // the new holder ends it and frees its slot
        return;
      }
      if (databaseLost) throw databaseLost;
      if (this.shutdown.signal.aborted && result.status === 'cancelled') {
        // Resumes in another process (or after a restart) from its recorded steps.
        leftUnfinished = await this.handBack(row, steps);
        return;
      }
      const finished = finishedFrom(result);
      if (result.status === 'paused') {
        await steps.flush(); // the snapshot holds every record, held ones too
        const snapshot = [...(await this.durable(executionId, () => store.loadSteps(this.deps.db, row.id))).values()];
        finished.output = await this.deps.pauses.persistPause({
          executionId, workspaceId: row.workspace_id, workflowId: row.workflow_id, versionId: version.id,
          mode: 'async', billedAccount: row.billed_account, input: row.input, baseUrl: row.link_base ?? this.deps.baseUrl(),
        }, result, snapshot);
      }
      charged = (await this.finish(row, finished))?.charged === true;
    } catch (err) {
      if (leaseLost) {
        leftUnfinished = true;
        return;
      }
      if (this.shutdown.signal.aborted) {
        leftUnfinished = await this.handBack(row, steps);
        return;
      }
      if (databaseLost !== undefined || isDatabaseUnavailable(err)) {
        // The database stayed away longer than the lease allows. The run is not failed for it: its
        // lease lapses and the job sweep of whichever process reaches the database next dispatches it
        // again; its recorded steps do not run again.
        leftUnfinished = true;
        this.deps.log.error({ err: databaseLost ?? err, executionId }, 'async run interrupted: the database is unavailable; it resumes once it is back');
        return;
      }
      this.deps.log.error({ err, executionId }, 'async run crashed');
      const crashed = failure(row, `Internal error: ${(err as Error).message}`);
      try {
        await this.durable(executionId, () => store.finishExecution(this.deps.db, executionId, crashed));
        this.observed(row, crashed);
      } catch (writeErr) {
        leftUnfinished = true; // its lease lapses; whoever takes it over ends it
        this.deps.log.error({ err: writeErr, executionId }, 'recording a crashed async run failed');
      }
    } finally {
      steps.discard();
      tracked.end();
      stopLease();
      // The slot taken at admission (maybe by another process) is freed by whoever ends the run.
      if (row.slot_token && !leftUnfinished && !this.shutdown.signal.aborted) {
        // Every async run but a resume was admitted under its own id (enqueue checks it), so its charge consumed
        // the reservation; a resume's admission reserved under no id and is given back.
        const reservationConsumed = charged && !row.resume_entry_id;
        await this.deps.limits.releaseSlot(row.billed_account, row.slot_token, { reservationConsumed }).catch(() => undefined);
      }
    }
  }

  /**
   * A worker shutting down hands its unfinished run back: the lease ends now, so another process's job
   * sweep dispatches it within seconds rather than after the lease. True when the run stays unfinished.
   */
  private async handBack(row: ExecutionRow, steps: StepRecorder): Promise<boolean> {
    // Held records first, so the next holder does not run those blocks again (once: a lost one's block runs again).
    await steps.handOver();
    await store.handBack(this.deps.db, row.id, row.attempts)
      .catch((err: unknown) => this.deps.log.warn({ err, executionId: row.id }, 'handing back an async run failed; its lease lapses instead'));
    return true;
  }

  /** Ends an async run: its final state and its base charge commit together (retried while the database is away). */
  private async finish(row: ExecutionRow, finished: FinishedExecution): Promise<store.EndedRun | undefined> {
    // Fenced by the lease: a worker whose run was taken over records nothing (the new holder ends it).
    const ended = await this.durable(row.id, () => this.deps.writes.finishes.submit({ id: row.id, attempt: row.attempts, f: finished }));
    if (ended) this.observed(row, finished);
    return ended;
  }

  private observed(row: ExecutionRow, finished: FinishedExecution): void {
    this.deps.observer?.runFinished({
      workflowId: row.workflow_id, executionId: publicExecutionId(row.id), workspaceId: row.workspace_id, trigger: row.trigger, mode: 'async', ...finished,
    });
  }

  /**
   * Starts the job sweep: the rows are the record, whatever the queue holds. Other processes may die holding
   * leases (their jobs are taken over once the lease expires), a run handed back or not taken (the database
   * was away) waits for a dispatch, and Redis may lose jobs. Embedded too: a job whose lease could not be
   * taken is dispatched again without waiting for a restart.
   */
  startSweep(): void {
    const { log, config } = this.deps;
    this.sweeper = setInterval(() => {
      if (this.sweeping) return;
      this.sweeping = true;
      this.recover(false)
        .catch((err: unknown) => log.warn({ err }, 'job sweep failed'))
        .finally(() => {
          this.sweeping = false;
        });
    }, Math.min(5_000, config.jobLeaseMs / 2));
    this.sweeper.unref();
  }

  /** Re-enqueues jobs left behind: all unfinished ones at embedded start-up, expired leases otherwise. */
  async recover(includeAllProcessing: boolean): Promise<number> {
    // Embedded mode: this process holds the data directory, so every lease left behind is a dead one,
    // and so is every sync run still marked running. Shared databases go by the leases.
    if (includeAllProcessing) await store.releaseLeases(this.deps.db);
    await store.failInterruptedSyncRuns(this.deps.db, includeAllProcessing);
    const jobs = await store.pendingJobs(this.deps.db, includeAllProcessing, 10_000);
    // The lease count as the dispatch: a run whose holder died is a new job to the queue, even while
    // the queue (BullMQ) still counts the dead holder's job as running.
    for (const job of jobs) await this.deps.queue.enqueue(job.id, job.attempts);
    return jobs.length;
  }

  /** Stops the sweep; running jobs are aborted (they resume elsewhere or after a restart) once `abortRuns` is called. */
  stopSweep(): void {
    if (this.sweeper) clearInterval(this.sweeper);
  }

  /** Aborts the runs still going: each hands its run back (docs/architecture.md, Run dispatch). */
  abortRuns(): void {
    this.shutdown.abort();
  }
}

function failure(row: ExecutionRow, error: string): FinishedExecution {
  return { status: 'failed', output: null, error, errorBlock: null, trace: [], startedAt: row.started_at ?? new Date(), endedAt: new Date(), durationMs: 0 };
}
