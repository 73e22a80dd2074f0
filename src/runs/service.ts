// The runs use cases: sync, async (leases, sweep, hand-back, fencing), children and cancellation over one
// engine path. Over 450 lines: the async job's life (lease, retries, takeover, shutdown) is one piece of
// state kept together on purpose; the pure parts already live beside it (execute-request, execute-response,
// pause-store, pauses, cancel, run-resource, and the group-committed writes in run-writes). The lease holder
// is the next seam to move out.
import type { Logger } from 'pino';
import type { AccountsService, Actor } from '../accounts/service.js';
import type { Config } from '../config.js';
import { isDatabaseUnavailable, retryWhileUnavailable, type Database } from '../db/database.js';
import { runWorkflow, type EnginePorts, type RunResult, type StepRecord, type StepRecording } from '../engine/index.js';
import { HttpError } from '../http/errors.js';
import { newId } from '../ids.js';
import { runUsageKey, type Admission, type LimitsService } from '../limits/service.js';
import type { RunObserver } from '../observability/observer.js';
import type { JobQueue } from '../queue/port.js';
import type { WorkflowService } from '../workflows/service.js';
import type { WorkflowRow } from '../workflows/service.js';
import { cancelRun, InFlightRuns, type CancelOutcome } from './cancel.js';
import { internalExecutionId, publicExecutionId, storedExecutionIds } from './execution-ids.js';
import { listRuns, type RunFilter, type RunListRow } from './history-store.js';
import { findResumeRun } from './pause-store.js';
import { PauseService, type ResumeOutcome } from './pauses.js';
import { RunWrites } from './run-writes.js';
import { StepRecorder } from './step-recorder.js';
import { resolveSelectors, type OutputSelector } from './output-selection.js';
import { capResult, finishedFrom, runLimits, runOutput } from './run-options.js';
import type { RunContext } from './run-context.js';
import * as store from './store.js';
import type { ExecutionRow, FinishedExecution, NewExecution } from './store.js';

const MAX_DEPTH = 10;

/** Who a run belongs to and who pays for it. */
/** Builds the engine's ports for one run (scoped to its workspace, billed to its account). */
export type PortFactory = (run: RunContext) => EnginePorts;

export interface RunsDeps {
  db: Database;
  config: Config;
  log: Logger;
  queue: JobQueue;
  limits: LimitsService;
  accounts: Pick<AccountsService, 'workspacePlan'>;
  workflows: WorkflowService;
  ports: PortFactory;
  /** Told when async runs start and runs finish (metrics, the run log line, traces). */
  observer?: RunObserver;
  /** Whether the Redis behind the queue answers; absent when runs are not dispatched through Redis. */
  pingRedis?: () => Promise<boolean>;
}

/** A run admitted past the deploy and limit gates, with the version it runs. */
export interface Admitted {
  workflow: WorkflowRow;
  versionId: string;
  admission: Admission;
  /** The stored id the run gets when its starter names none (its reserved charge is keyed by it). */
  executionId: string;
}

/** How a run is admitted (see `ExecutionService.admit`). */
export interface AdmitOptions {
  /** The caller-chosen id the run will be started with (X-Execution-Id, a webhook delivery's, a schedule tick's). */
  executionId?: string;
  /** The rate bucket, when not the run's mode: MCP tools/call queues a run but its caller waits, so it draws on `sync`. */
  bucket?: 'sync' | 'async';
  /** A draft run (dashboard, `useDraftState`): the saved draft, checked like a deploy, by this actor. */
  draftBy?: Actor;
}

export interface StartOptions {
  /** Caller-chosen id (X-Execution-Id / Idempotency-Key), unique within the workspace: a repeat answers 409. */
  executionId?: string;
  apiKeyId: string | null;
  trigger: string;
  /** Public base of the links the run hands out (resume links, status URLs). */
  baseUrl: string;
  /** Async only: the caller's own timeout in seconds; the plan's async timeout still caps it. */
  timeoutSeconds?: number;
}

/** Runs deployed workflows: sync in the request, async through the durable job rows and the queue. */
export class ExecutionService {
  private readonly shutdown = new AbortController();
  readonly pauses: PauseService;
  readonly limits: LimitsService;
  private fallbackBaseUrl?: string;
  private sweeper?: NodeJS.Timeout;
  /** A sweep in progress (the next tick skips rather than piling up while the database or Redis is slow). */
  private sweeping = false;
  /** Runs in progress in this process: a cancel stops them at once. */
  private readonly inFlight = new InFlightRuns();

  /** Runs' writes, group-committed across the runs that write at the same time. */
  private readonly writes: RunWrites;

  /** True when runs are dispatched through Redis and it answers PING now. */
  redisAvailable(): Promise<boolean> {
    return this.deps.pingRedis ? this.deps.pingRedis() : Promise.resolve(false);
  }

  constructor(private readonly deps: RunsDeps) {
    this.limits = deps.limits;
    this.writes = new RunWrites(deps.db, deps.limits, deps.config.jobLeaseMs);
    this.pauses = new PauseService({
      db: deps.db, log: deps.log, queue: deps.queue, workflows: deps.workflows,
      startResumed: (run, graph, opts) => this.execute(run, graph, opts),
      charge: (q, account, executionId) => this.deps.limits.chargeRun(account, executionId, q),
      planOf: (workspaceId) => this.deps.accounts.workspacePlan(workspaceId),
      baseUrl: () => this.baseUrl(),
      track: (executionId, parent) => this.inFlight.start(executionId, parent),
      leaseMs: deps.config.jobLeaseMs,
    });
  }

  private get db(): Database {
    return this.deps.db;
  }

  /** The base for links built outside a request: WEFT_BASE_URL, else the address this process listens on. */
  baseUrl(): string {
    return this.deps.config.baseUrl ?? this.fallbackBaseUrl ?? `http://localhost:${this.deps.config.port}`;
  }

  setFallbackBaseUrl(url: string): void {
    this.fallbackBaseUrl = url;
  }

  /**
   * The door every new run passes (execute v1 and v2, webhooks, schedules, MCP, draft runs, the CLI):
   * after the workflow is found and authorized, in the reference's order: deployed (or the draft checked),
   * then the limits' one admission (usage cap with the base charge reserved, the rate bucket, a
   * concurrency slot). Resumes pass `admitResume`, which ends in the same admission.
   */
  async admit(workflow: WorkflowRow, run: RunContext, mode: 'sync' | 'async', opts: AdmitOptions = {}): Promise<Admitted> {
    const versionId = opts.draftBy
      ? (await this.deps.workflows.draftVersion(workflow, opts.draftBy)).id
      : (await this.deps.workflows.activeVersion(workflow))?.id;
    if (!versionId) throw new HttpError(403, 'Workflow is not deployed', { v2Details: { code: 'WORKFLOW_NOT_DEPLOYED' } });
    // A caller-chosen id is reserved for alone; otherwise the run takes the id of a charge reserved ahead.
    const chosen = opts.executionId ? internalExecutionId(opts.executionId, run.workspaceId) : undefined;
    const admission = await this.limits.admitRun(run.billedAccount, run.plan, chosen
      ? { bucket: opts.bucket ?? mode, mode, usageKey: runUsageKey(chosen) }
      : { bucket: opts.bucket ?? mode, mode, chooseExecutionId: true });
    return { workflow, versionId, admission, executionId: chosen ?? admission.executionId ?? newId() };
  }

  /**
   * The door of a resume (the API's and the resume page's): the paused run's account is admitted like a
   * new run of the paused run's mode (usage cap, that mode's bucket, a concurrency slot), then the resume
   * runs. A sync resume holds its admission while it runs; an async one hands its slot to its job (freed by
   * the worker that ends it); one queued behind another resume frees it at once.
   */
  async resume(
    target: { workspaceId: string; workflowId: string; executionId: string; contextId: string },
    input: unknown,
    caller: { apiKeyId: string | null; signal: AbortSignal },
  ): Promise<ResumeOutcome> {
    const paused = await this.pauses.find(target.workspaceId, target.workflowId, target.executionId);
    if (!paused) throw new HttpError(404, 'Paused execution not found or already resumed');
    const mode = paused.mode === 'async' ? 'async' : 'sync';
    const plan = await this.deps.accounts.workspacePlan(paused.workspace_id);
    const admission = await this.limits.admitRun(paused.billed_account, plan, { bucket: mode, mode });
    let handedOver = false;
    try {
      const outcome = await this.pauses.resume(target, input, { ...caller, slotToken: admission.slot });
      handedOver = outcome.kind === 'job';
      return outcome;
    } finally {
      if (!handedOver) await admission.release();
    }
  }

  /** Resolves `selectedOutputs` against the version an admitted run will run. */
  async outputSelectors(admitted: Admitted, selected: readonly string[] | undefined): Promise<OutputSelector[]> {
    if (!selected || selected.length === 0) return [];
    try {
      const version = await this.deps.workflows.loadVersion(admitted.versionId);
      return version ? resolveSelectors(version.definition, selected) : [];
    } catch (err) {
      // A bad selection refuses the request before its run starts: the admission is given back.
      await admitted.admission.release();
      throw err;
    }
  }

  /**
   * The one path every run takes through the engine (sync, async, child and resumed): the run's
   * ports, its plan's limits, and its result capped to what may be stored.
   */
  private async execute(
    run: RunContext,
    graph: ReturnType<WorkflowService['compileVersion']>,
    opts: { input: Record<string, unknown>; mode: 'sync' | 'async'; signal: AbortSignal; depth?: number; trigger?: string;
      recorded?: ReadonlyMap<string, StepRecord>; onStep?: (s: StepRecord, how: StepRecording) => Promise<void>; timeoutMs?: number | null },
  ): Promise<RunResult> {
    const limits = runLimits(this.deps.config, this.limits.plan(run.plan), opts.mode);
    if (opts.timeoutMs) limits.timeoutMs = Math.min(limits.timeoutMs, opts.timeoutMs);
    const result = await runWorkflow(graph, {
      input: opts.input,
      // A webhook delivery enters at the webhook block, a scheduled run at the schedule block; every
      // other run at the start block.
      entry: opts.trigger === 'webhook' || opts.trigger === 'schedule' ? opts.trigger : undefined,
      ports: this.deps.ports(run),
      signal: opts.signal,
      depth: opts.depth ?? 0,
      recorded: opts.recorded,
      onStep: opts.onStep,
      ...limits,
    });
    return capResult(result, this.deps.config.maxRunResultBytes);
  }

  async runSync(
    admitted: Admitted,
    run: RunContext,
    input: Record<string, unknown>,
    opts: StartOptions & { signal: AbortSignal; onBlock?: (step: StepRecord) => void },
  ): Promise<{ executionId: string; result: RunResult; output: unknown; periodCostUsd?: number }> {
    const executionId = opts.executionId ? internalExecutionId(opts.executionId, run.workspaceId) : admitted.executionId;
    const base: NewExecution = {
      id: executionId, workspaceId: run.workspaceId, workflowId: admitted.workflow.id, versionId: admitted.versionId,
      mode: 'sync', trigger: opts.trigger, status: 'processing', billedAccount: run.billedAccount, apiKeyId: opts.apiKeyId, input,
      linkBase: opts.baseUrl,
    };
    let stopLease = () => {};
    let tracked: { signal: AbortSignal; end: () => void } | undefined;
    try {
      // A caller-chosen id is claimed before the run so a concurrent repeat cannot start a second one.
      // The claimed row holds a lease while the run lasts: a run whose process died is closed by the sweep,
      // and a cancel asked through another process is seen at the next renewal.
      if (opts.executionId && !(await store.claimExecution(this.db, base))) throw executionIdConflict(executionId);
      tracked = this.inFlight.start(executionId, opts.signal);
      if (opts.executionId) stopLease = await this.holdLease(executionId, false, () => this.inFlight.abort(executionId));
      const version = await this.deps.workflows.loadVersion(admitted.versionId);
      if (!version) throw new HttpError(404, 'Workflow not found');
      const steps: StepRecord[] = [];
      const result = await this.execute({ ...run, executionId }, this.deps.workflows.compileVersion(version), {
        input, mode: 'sync', signal: tracked.signal, trigger: opts.trigger,
        // Kept in memory: only a pause needs them (its snapshot).
        onStep: async (s) => {
          steps.push(s);
          opts.onBlock?.(s);
        },
      });
      const finished = finishedFrom(result);
      let output = runOutput(result);
      // The account's cost this period with this run's charge, when the statement that wrote the run said it.
      let periodCostUsd: number | undefined;
      if (result.status === 'paused') {
        // The paused run's row (with its pause output and base charge) and its pause record commit in one
        // transaction: a paused run never lacks its record, resume links and timeouts.
        output = await this.pauses.persistPause({
          executionId, workspaceId: run.workspaceId, workflowId: admitted.workflow.id, versionId: admitted.versionId,
          mode: 'sync', billedAccount: run.billedAccount, input, baseUrl: opts.baseUrl,
        }, result, steps, async (q, pauseOutput) => {
          const paused = { ...finished, output: pauseOutput };
          if (opts.executionId) await store.finishExecution(q, executionId, paused);
          else if (!(await store.insertFinished(q, base, paused))) throw executionIdConflict(executionId);
          await this.limits.chargeRun(run.billedAccount, executionId, q);
        });
      } else {
        // The run's log and its base charge commit together, before the answer; concurrent runs share the commit.
        const ended = opts.executionId
          ? await this.writes.finishes.submit({ id: executionId, attempt: null, f: finished })
          : await this.writes.finishedRuns.submit({ e: base, f: finished });
        if (!ended && !opts.executionId) throw executionIdConflict(executionId);
        periodCostUsd = ended?.periodCostUsd;
        // Its charge consumed the reservation made at admission: the release has nothing to give back.
        if (ended?.charged) admitted.admission.charged(runUsageKey(executionId));
      }
      this.deps.observer?.runFinished({
        workflowId: admitted.workflow.id, executionId: publicExecutionId(executionId), workspaceId: run.workspaceId, trigger: opts.trigger, mode: 'sync', ...finished,
      });
      return { executionId: publicExecutionId(executionId), result, output, periodCostUsd };
    } finally {
      tracked?.end();
      stopLease();
      await admitted.admission.release();
    }
  }

  /**
   * Takes the row's lease (unless already held) and renews it until the returned function is called;
   * `onCancel` runs when a renewal finds that the run was asked to stop.
   */
  private async holdLease(
    executionId: string, alreadyHeld = false, onCancel?: () => void, held?: { attempt: number; onLost: () => void },
  ): Promise<() => void> {
    const leaseMs = this.deps.config.jobLeaseMs;
    if (!alreadyHeld && (await store.renewLease(this.db, executionId, leaseMs)) === 'cancel') onCancel?.();
    const timer = setInterval(() => {
      // A dropped connection is retried until the next renewal is due; the lease outlasts two misses.
      retryWhileUnavailable(() => store.renewLease(this.db, executionId, leaseMs, held?.attempt), { deadlineMs: leaseMs / 3 })
        .then((state) => {
          if (state === 'cancel') onCancel?.();
          else if (state === 'lost') {
            clearInterval(timer);
            held?.onLost();
          }
        })
        .catch((err: unknown) => this.deps.log.warn({ err, executionId }, 'lease renewal failed'));
    }, leaseMs / 3);
    return () => clearInterval(timer);
  }

  /** A run of a workflow in a workspace by the id its callers know (a caller-chosen id or the server's). */
  async findRun(workspaceId: string, workflowId: string, runId: string): Promise<store.ExecutionRow | undefined> {
    const row = await store.findExecutionAmong(this.db, storedExecutionIds(runId, [workspaceId]));
    return row && row.workspace_id === workspaceId && row.workflow_id === workflowId ? row : undefined;
  }

  /** Async runs queued and not started yet, in the database (the metrics' queue depth). */
  queueDepth(): Promise<number> {
    return store.countQueued(this.db);
  }

  /** Runs of a workflow by start time (the v2 runs list). */
  listRuns(filter: RunFilter): Promise<RunListRow[]> {
    return listRuns(this.db, filter);
  }

  /** A resume admitted behind another one, by the run id it was given (its run does not exist yet). */
  queuedResume(workspaceId: string, workflowId: string, runId: string) {
    return findResumeRun(this.db, workspaceId, workflowId, runId);
  }

  /** Cancels a run in any state (see cancel.ts). */
  cancel(row: store.ExecutionRow): Promise<CancelOutcome> {
    return cancelRun({ db: this.db, inFlight: this.inFlight, releaseSlot: (a, s) => this.limits.releaseSlot(a, s) }, row);
  }

  async enqueue(admitted: Admitted, run: RunContext, input: Record<string, unknown>, opts: StartOptions): Promise<string> {
    const executionId = admitted.executionId;
    // The admission reserved the run's charge under this id, and the worker relies on that (runLeased).
    if (opts.executionId && internalExecutionId(opts.executionId, run.workspaceId) !== executionId) {
      throw new Error('an async run is started under another id than it was admitted with');
    }
    // A worker of this process with a free slot takes the run in the statement that accepts it
    // (docs/architecture.md, Run dispatch): one write less, and no wait in the queue.
    const slot = this.shutdown.signal.aborted ? undefined : this.deps.queue.reserve?.();
    let claimed: ExecutionRow | undefined;
    try {
      claimed = await this.writes.claims.submit({
        id: executionId, workspaceId: run.workspaceId, workflowId: admitted.workflow.id, versionId: admitted.versionId,
        mode: 'async', trigger: opts.trigger, status: 'queued', billedAccount: run.billedAccount, apiKeyId: opts.apiKeyId, input,
        slotToken: admitted.admission.slot, linkBase: opts.baseUrl,
        timeoutMs: opts.timeoutSeconds !== undefined ? opts.timeoutSeconds * 1000 : null,
        ...(slot ? { leaseMs: this.deps.config.jobLeaseMs } : {}),
      });
    } catch (err) {
      slot?.release();
      throw err;
    }
    if (!claimed) {
      slot?.release();
      await admitted.admission.release();
      throw executionIdConflict(executionId);
    }
    if (slot) {
      const row = claimed;
      slot.start(executionId, () => this.runLeased(row));
      return publicExecutionId(executionId);
    }
    // The committed row is the accepted run: a dispatch that fails or hangs (Redis away) is left to
    // the sweep, which dispatches every queued row again, so the caller is told it was accepted.
    await dispatchSoon(this.deps.queue.enqueue(executionId)).catch((err: unknown) =>
      this.deps.log.warn({ err, executionId }, 'dispatching an accepted run failed; the job sweep dispatches it'));
    return publicExecutionId(executionId);
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
      leased = await this.durable(executionId, () => this.writes.leases.submit(executionId));
    } catch (err) {
      // The row is unchanged (still queued) or its lease lapses: the job sweep dispatches it again.
      this.deps.log.warn({ err, executionId }, 'could not take an async run; the job sweep dispatches it again');
      return;
    }
    if (!leased) return; // finished, or another worker holds it
    return this.runLeased(leased);
  }

  /** Runs an async run whose lease this process holds (taken by `runJob`, or by the statement that accepted it). */
  private async runLeased(row: ExecutionRow): Promise<void> {
    const executionId = row.id;
    if (row.attempts === 1 && row.started_at) this.deps.observer?.runStarted({ trigger: row.trigger, waitMs: row.started_at.getTime() - row.created_at.getTime() });
    const tracked = this.inFlight.start(executionId, this.shutdown.signal);
    /** Set when another worker took the run over (this one's lease lapsed): this one stops and writes nothing more. */
    let leaseLost = false;
    const stopLease = await this.holdLease(executionId, true, () => this.inFlight.abort(executionId), { // the lease above took it
      attempt: row.attempts,
      onLost: () => {
        leaseLost = true;
        this.deps.log.warn({ executionId, attempt: row.attempts }, 'async run no longer held by this worker (taken over, or ended): it stops and records nothing more');
        this.inFlight.abort(executionId);
      },
    });
    /** Set when a write of the run failed because the database stayed away: the run is left to a takeover. */
    let databaseLost: unknown;
    /** The run was left unfinished for another holder (shutdown or database away): its slot stays taken. */
    let leftUnfinished = false;
    /** Its base charge was written by this worker's final write (which consumed the reservation made under its id). */
    let charged = false;
    try {
      // Cancelled while its previous process ran it: it does not start again.
      if (row.cancel_requested_at) {
        await this.durable(executionId, () => store.finishExecution(this.db, executionId, { ...failure(row, 'Run cancelled'), status: 'cancelled' }));
        return;
      }
      // Each lease of an unfinished run after the first means the process running it stopped mid-run.
      // A run that keeps taking its process down is failed instead of being retried forever.
      const interruptions = row.attempts - 1;
      if (interruptions > this.deps.config.maxJobInterruptions) {
        charged = (await this.finish(row, failure(row, `Interrupted repeatedly: the run was interrupted ${interruptions} times by a stopped or crashed process (limit ${this.deps.config.maxJobInterruptions}, WEFT_MAX_JOB_INTERRUPTIONS)`)))?.charged === true;
        return;
      }
      const recorded = row.attempts > 1 ? await this.durable(executionId, () => store.loadSteps(this.db, row.id)) : new Map<string, StepRecord>();
      const steps = new StepRecorder(row.id,
        (step) => this.durable(executionId, () => this.writes.steps.submit(step)),
        (step) => this.writes.steps.submit(step));
      const onStep = async (step: StepRecord, how: StepRecording) => {
        try {
          await steps.record(step, how);
        } catch (err) {
          if (isDatabaseUnavailable(err)) {
            // Stop the run: it resumes from its recorded steps once the database is back.
            databaseLost ??= err;
            this.inFlight.abort(executionId);
          }
          throw err;
        }
      };
      if (row.resume_entry_id) {
        const { result, output } = await this.pauses.runEntry(row.resume_entry_id, { signal: tracked.signal, shutdown: this.shutdown.signal, recorded, onStep });
        if (leaseLost) {
          leftUnfinished = true;
          return;
        }
        if (databaseLost) throw databaseLost;
        if (this.shutdown.signal.aborted && result.status === 'cancelled') {
          leftUnfinished = await this.handBack(row);
          return;
        }
        charged = (await this.finish(row, { ...finishedFrom(result), output }))?.charged === true;
        return;
      }
      const version = row.version_id ? await this.durable(executionId, () => this.deps.workflows.loadVersion(row.version_id as string)) : undefined;
      if (!version) throw new Error('The deployed version of this run no longer exists');
      const plan = await this.durable(executionId, () => this.deps.accounts.workspacePlan(row.workspace_id));
      const run: RunContext = { workspaceId: row.workspace_id, billedAccount: row.billed_account, plan, executionId: row.id };
      const result = await this.execute(run, this.deps.workflows.compileVersion(version), {
        input: row.input, mode: 'async', signal: tracked.signal, recorded, onStep, trigger: row.trigger, timeoutMs: row.timeout_ms,
      });
      if (leaseLost) {
        leftUnfinished = true; // the new holder ends it and frees its slot
        return;
      }
      if (databaseLost) throw databaseLost;
      if (this.shutdown.signal.aborted && result.status === 'cancelled') {
        // Resumes in another process (or after a restart) from its recorded steps.
        leftUnfinished = await this.handBack(row);
        return;
      }
      const finished = finishedFrom(result);
      if (result.status === 'paused') {
        await steps.settled(); // the snapshot holds every record sent
        const snapshot = [...(await this.durable(executionId, () => store.loadSteps(this.db, row.id))).values()];
        finished.output = await this.pauses.persistPause({
          executionId, workspaceId: row.workspace_id, workflowId: row.workflow_id, versionId: version.id,
          mode: 'async', billedAccount: row.billed_account, input: row.input, baseUrl: row.link_base ?? this.baseUrl(),
        }, result, snapshot);
      }
      charged = (await this.finish(row, finished))?.charged === true;
    } catch (err) {
      if (leaseLost) {
        leftUnfinished = true;
        return;
      }
      if (this.shutdown.signal.aborted) {
        leftUnfinished = await this.handBack(row);
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
        await this.durable(executionId, () => store.finishExecution(this.db, executionId, crashed));
        this.observed(row, crashed);
      } catch (writeErr) {
        leftUnfinished = true; // its lease lapses; whoever takes it over ends it
        this.deps.log.error({ err: writeErr, executionId }, 'recording a crashed async run failed');
      }
    } finally {
      tracked.end();
      stopLease();
      // The slot taken at admission (maybe by another process) is freed by whoever ends the run.
      if (row.slot_token && !leftUnfinished && !this.shutdown.signal.aborted) {
        // Every async run but a resume was admitted under its own id (enqueue checks it), so its charge consumed
        // the reservation; a resume's admission reserved under no id and is given back.
        const reservationConsumed = charged && !row.resume_entry_id;
        await this.limits.releaseSlot(row.billed_account, row.slot_token, { reservationConsumed }).catch(() => undefined);
      }
    }
  }

  /**
   * A worker shutting down hands its unfinished run back: the lease ends now, so another process's job
   * sweep dispatches it within seconds rather than after the lease. True when the run stays unfinished.
   */
  private async handBack(row: ExecutionRow): Promise<boolean> {
    await store.handBack(this.db, row.id, row.attempts)
      .catch((err: unknown) => this.deps.log.warn({ err, executionId: row.id }, 'handing back an async run failed; its lease lapses instead'));
    return true;
  }

  /** Ends an async run: its final state and its base charge commit together (retried while the database is away). */
  private async finish(row: ExecutionRow, finished: FinishedExecution): Promise<store.EndedRun | undefined> {
    // Fenced by the lease: a worker whose run was taken over records nothing (the new holder ends it).
    const ended = await this.durable(row.id, () => this.writes.finishes.submit({ id: row.id, attempt: row.attempts, f: finished }));
    if (ended) this.observed(row, finished);
    return ended;
  }

  private observed(row: ExecutionRow, finished: FinishedExecution): void {
    this.deps.observer?.runFinished({
      workflowId: row.workflow_id, executionId: publicExecutionId(row.id), workspaceId: row.workspace_id, trigger: row.trigger, mode: 'async', ...finished,
    });
  }

  /** Runs another deployed workflow of the same workspace inside a run (the workflow block). */
  async runChild(run: RunContext, workflowId: string, input: Record<string, unknown>, depth: number, signal: AbortSignal) {
    if (depth > MAX_DEPTH) return { success: false, output: null, error: `Child workflows nest deeper than ${MAX_DEPTH} levels` };
    const w = await this.deps.workflows.findInWorkspace(run.workspaceId, workflowId);
    if (!w) return { success: false, output: null, error: `Workflow ${workflowId} not found` };
    const version = await this.deps.workflows.activeVersion(w);
    if (!version) return { success: false, output: null, error: `Workflow "${w.name}" is not deployed` };
    const result = await this.execute(run, this.deps.workflows.compileVersion(version), { input, mode: 'sync', signal, depth });
    if (result.status !== 'completed') return { success: false, output: result.output ?? null, error: result.error?.message ?? `Child workflow ${result.status}` };
    return { success: true, output: runOutput(result) };
  }

  /**
   * Starts taking async jobs, pause timeouts and (on PostgreSQL) the lease sweeper. Recovery of what a
   * previous process left unfinished runs in the background: the server already answers meanwhile.
   */
  startWorkers(): void {
    const { queue, log, config, db } = this.deps;
    queue.work((id) => this.runJob(id));
    this.pauses.start();
    // Tried again while the database is away (recovering twice only dispatches twice, which the leases absorb).
    retryWhileUnavailable(() => this.recover(db.mode === 'pglite'), { deadlineMs: config.jobLeaseMs })
      .then((recovered) => {
        if (recovered > 0) log.info({ recovered }, 'resuming unfinished async runs');
      })
      .catch((err: unknown) => log.error({ err }, 'recovering unfinished async runs failed; the job sweep tries again'));
    // The rows are the record, whatever the queue holds: other processes may die holding leases (their
    // jobs are taken over once the lease expires), a run handed back or not taken (the database was
    // away) waits for a dispatch, and Redis may lose jobs. Embedded too: a job whose lease could not be
    // taken is dispatched again without waiting for a restart.
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
    if (includeAllProcessing) await store.releaseLeases(this.db);
    await store.failInterruptedSyncRuns(this.db, includeAllProcessing);
    const jobs = await store.pendingJobs(this.db, includeAllProcessing, 10_000);
    // The lease count as the dispatch: a run whose holder died is a new job to the queue, even while
    // the queue (BullMQ) still counts the dead holder's job as running.
    for (const job of jobs) await this.deps.queue.enqueue(job.id, job.attempts);
    return jobs.length;
  }

  /** Lets running jobs finish for 5 s, then aborts the rest (they resume after a restart) and waits for them. */
  async close(): Promise<void> {
    if (this.sweeper) clearInterval(this.sweeper);
    this.pauses.stop();
    await this.deps.queue.close(5_000);
    this.shutdown.abort();
    await this.deps.queue.close(1_000);
  }
}

function failure(row: ExecutionRow, error: string): FinishedExecution {
  return { status: 'failed', output: null, error, errorBlock: null, trace: [], startedAt: row.started_at ?? new Date(), endedAt: new Date(), durationMs: 0 };
}

export function executionIdConflict(executionId: string): HttpError {
  return new HttpError(409, 'Execution ID has already been used', { code: 'EXECUTION_ID_CONFLICT', executionId: publicExecutionId(executionId) });
}

/** A dispatch that has not settled within a few seconds (Redis away) is left to the job sweep. */
function dispatchSoon(p: Promise<void>, ms = 3_000): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([
    p.finally(() => clearTimeout(timer)),
    new Promise<void>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`the job queue did not answer within ${ms} ms`)), ms);
      timer.unref();
    }),
  ]);
}
