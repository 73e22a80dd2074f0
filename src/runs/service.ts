// The runs use cases: admission, sync runs, accepting async runs, children, resumes and cancellation, over
// one engine path. The life of an async run in the process that holds its lease is in async-worker.ts, the
// lease itself in lease-holder.ts, the group-committed writes in run-writes.ts.
import type { Actor } from '../accounts/service.js';
import { isDatabaseUnavailable, retryWhileUnavailable, type Database } from '../db/database.js';
import { runWorkflow, type EnginePorts, type RunResult, type RunTree, type StepRecord } from '../engine/index.js';
import { HttpError } from '../http/errors.js';
import { isUuid, newTimeOrderedId } from '../ids.js';
import { runUsageKey, type Admission, type LimitsService } from '../limits/service.js';
import type { WorkflowService } from '../workflows/service.js';
import type { WorkflowRow } from '../workflows/service.js';
import { AsyncRunWorker, type ExecuteOptions, type RunsCoreDeps } from './async-worker.js';
import { cancelRun, InFlightRuns, newRunController, type CancelOutcome } from './cancel.js';
import { internalExecutionId, publicExecutionId, storedExecutionIds } from './execution-ids.js';
import { holdLease } from './lease-holder.js';
import { listRuns, type RunFilter, type RunListRow } from './history-store.js';
import { findResumeRun } from './pause-store.js';
import { PauseService, type ResumeOutcome } from './pauses.js';
import { RunWrites } from './run-writes.js';
import { resolveSelectors, type OutputSelector } from './output-selection.js';
import { capResult, finishedFrom, runLimits, runOutput } from './run-options.js';
import type { RunContext } from './run-context.js';
import * as store from './store.js';
import type { ExecutionRow, NewExecution } from './store.js';

const MAX_DEPTH = 10;

/** Who a run belongs to and who pays for it. */
/** Builds the engine's ports for one run (scoped to its workspace, billed to its account). */
export type PortFactory = (run: RunContext) => EnginePorts;

export interface RunsDeps extends RunsCoreDeps {
  ports: PortFactory;
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
  readonly pauses: PauseService;
  readonly limits: LimitsService;
  private fallbackBaseUrl?: string;
  /** The async runs this process holds (src/runs/async-worker.ts). */
  private readonly worker: AsyncRunWorker;
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
      maxResultBytes: deps.config.maxRunResultBytes, maxPausePoints: deps.config.maxPausePoints,
      startResumed: (run, graph, opts) => this.execute(run, graph, opts),
      charge: (q, account, executionId) => this.deps.limits.chargeRun(account, executionId, q),
      planOf: (workspaceId) => this.deps.accounts.workspacePlan(workspaceId),
      admitResume: async (paused) => {
        const plan = await this.deps.accounts.workspacePlan(paused.workspace_id);
        return this.limits.admitRun(paused.billed_account, plan, { bucket: 'async', mode: 'async' });
      },
      baseUrl: () => this.baseUrl(),
      track: (executionId, parent) => this.inFlight.start(executionId, parent),
      leaseMs: deps.config.jobLeaseMs,
    });
    this.worker = new AsyncRunWorker({
      ...deps, writes: this.writes, inFlight: this.inFlight, pauses: this.pauses,
      execute: (run, graph, opts) => this.execute(run, graph, opts), baseUrl: () => this.baseUrl(),
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
    // A caller id is stored with its workspace as a suffix, so the claim alone cannot see a run of this
    // workspace whose id the server minted: claiming that id would hide the run behind the new one.
    if (opts.executionId && isUuid(opts.executionId) && await store.executionExistsIn(this.db, opts.executionId, run.workspaceId)) {
      throw executionIdConflict(opts.executionId);
    }
    const admission = await this.limits.admitRun(run.billedAccount, run.plan, chosen
      ? { bucket: opts.bucket ?? mode, mode, usageKey: runUsageKey(chosen) }
      : { bucket: opts.bucket ?? mode, mode, chooseExecutionId: true });
    return { workflow, versionId, admission, executionId: chosen ?? admission.executionId ?? newTimeOrderedId() };
  }

  /**
   * The door of a resume (the API's and the resume page's): the paused run's account is admitted like a
   * new run of the paused run's mode (usage cap, that mode's bucket, a concurrency slot), then the resume
   * runs. A sync resume holds its admission while it runs; an async one hands its slot to its job (freed by
   * the worker that ends it); one queued behind another resume keeps it on its queue entry, then hands it to
   * its job in turn (a queued resume is a run of the account's, and counts as one).
   */
  async resume(
    target: { workspaceId: string; workflowId: string; executionId: string; contextId: string },
    input: unknown,
    caller: { apiKeyId: string | null; signal: AbortSignal; streamedAsJob?: boolean },
  ): Promise<ResumeOutcome> {
    const paused = await this.pauses.find(target.workspaceId, target.workflowId, target.executionId);
    if (!paused) throw new HttpError(404, 'Paused execution not found or already resumed');
    const mode = paused.mode === 'async' ? 'async' : 'sync';
    const plan = await this.deps.accounts.workspacePlan(paused.workspace_id);
    const admission = await this.limits.admitRun(paused.billed_account, plan, { bucket: mode, mode });
    let handedOver = false;
    try {
      const outcome = await this.pauses.resume(target, input, { ...caller, slotToken: admission.slot });
      handedOver = outcome.kind === 'job' || outcome.kind === 'queued';
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
  private async execute(run: RunContext, graph: ReturnType<WorkflowService['compileVersion']>, opts: ExecuteOptions): Promise<RunResult> {
    const limits = runLimits(this.deps.config, this.limits.plan(run.plan), opts.mode);
    if (opts.timeoutMs) limits.timeoutMs = Math.min(limits.timeoutMs, opts.timeoutMs);
    const result = await runWorkflow(graph, {
      input: opts.input,
      // A webhook delivery enters at the webhook block, a scheduled run at the schedule block; every
      // other run at the start block.
      entry: opts.trigger === 'webhook' || opts.trigger === 'schedule' ? opts.trigger : undefined,
      ports: this.deps.ports(run),
      signal: opts.signal,
      newController: newRunController,
      depth: opts.depth ?? 0,
      tree: opts.tree,
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
    opts: StartOptions & { signal: AbortSignal; onBlock?: (step: StepRecord) => void; streamed?: boolean },
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
      if (opts.executionId) {
        stopLease = await holdLease({
          db: this.db, leaseMs: this.deps.config.jobLeaseMs, log: this.deps.log, executionId, onCancel: () => this.inFlight.abort(executionId),
        });
      }
      const version = await this.deps.workflows.loadVersion(admitted.versionId);
      if (!version) throw new HttpError(404, 'Workflow not found');
      const steps: StepRecord[] = [];
      let result = await this.execute({ ...run, executionId }, this.deps.workflows.compileVersion(version), {
        input, mode: 'sync', signal: tracked.signal, trigger: opts.trigger,
        // Kept in memory: only a pause needs them (its snapshot).
        onStep: async (s) => {
          steps.push(s);
          opts.onBlock?.(s);
        },
      });
      let finished = finishedFrom(result);
      let output = runOutput(result);
      // The account's cost this period with this run's charge, when the statement that wrote the run said it.
      let periodCostUsd: number | undefined;
      if (result.status === 'paused') {
        // The paused run's row (with its pause output and base charge) and its pause record commit in one
        // transaction: a paused run never lacks its record, resume links and timeouts.
        output = await this.pauses.persistPause({
          executionId, workspaceId: run.workspaceId, workflowId: admitted.workflow.id, versionId: admitted.versionId,
          mode: 'sync', billedAccount: run.billedAccount, input, baseUrl: opts.baseUrl, streamed: opts.streamed,
        }, result, steps, async (q, pauseOutput) => {
          const paused = { ...finished, output: pauseOutput };
          if (opts.executionId) await store.finishExecution(q, executionId, paused);
          else if (!(await store.insertFinished(q, base, paused))) throw executionIdConflict(executionId);
          await this.limits.chargeRun(run.billedAccount, executionId, q);
        });
      } else {
        // The run's log and its base charge commit together, before the answer; concurrent runs share the commit.
        const write = (f: typeof finished) => opts.executionId
          ? this.writes.finishes.submit({ id: executionId, attempt: null, f })
          : this.writes.finishedRuns.submit({ e: base, f });
        let ended: Awaited<ReturnType<typeof write>>;
        try {
          ended = await write(finished);
        } catch (err) {
          // The database refused this result itself (not an outage): the run is recorded, and answered, as
          // failed without its output and trace, so it keeps a log row and its charge (docs/architecture.md,
          // Run lifecycle). When that write fails too, the first error stands.
          if (isDatabaseUnavailable(err)) throw err;
          this.deps.log.error({ err, executionId }, 'storing a sync run\'s result failed; recording the run as failed without it');
          result = unstoredResult(result);
          finished = finishedFrom(result);
          output = null;
          ended = await write(finished).catch(() => Promise.reject(err));
        }
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
   * A run of a workflow in a workspace by the id its callers know (a caller-chosen id or the server's); `large`
   * leaves out the large columns its caller does not answer (they read as null).
   */
  async findRun(workspaceId: string, workflowId: string, runId: string, large: store.LargeColumns = {}): Promise<store.ExecutionRow | undefined> {
    const row = await store.findExecutionAmong(this.db, storedExecutionIds(runId, [workspaceId]), large);
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
    const slot = this.worker.stopping ? undefined : this.deps.queue.reserve?.();
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
      slot.start(executionId, () => this.worker.runLeased(row));
      return publicExecutionId(executionId);
    }
    // The committed row is the accepted run: a dispatch that fails or hangs (Redis away) is left to
    // the sweep, which dispatches every queued row again, so the caller is told it was accepted.
    await dispatchSoon(this.deps.queue.enqueue(executionId)).catch((err: unknown) =>
      this.deps.log.warn({ err, executionId }, 'dispatching an accepted run failed; the job sweep dispatches it'));
    return publicExecutionId(executionId);
  }

  /**
   * Runs another deployed workflow of the same workspace inside a run (the workflow block), in the calling
   * run's tree: it counts against that run's step budget, held outputs, concurrency and pacing.
   */
  async runChild(run: RunContext, workflowId: string, input: Record<string, unknown>, opts: { depth: number; signal: AbortSignal; tree: RunTree }) {
    const { depth, signal, tree } = opts;
    if (depth > MAX_DEPTH) return { success: false, output: null, error: `Child workflows nest deeper than ${MAX_DEPTH} levels` };
    const w = await this.deps.workflows.findInWorkspace(run.workspaceId, workflowId);
    if (!w) return { success: false, output: null, error: `Workflow ${workflowId} not found` };
    const version = await this.deps.workflows.activeVersion(w);
    if (!version) return { success: false, output: null, error: `Workflow "${w.name}" is not deployed` };
    const result = await this.execute(run, this.deps.workflows.compileVersion(version), { input, mode: 'sync', signal, depth, tree });
    if (result.status !== 'completed') return { success: false, output: result.output ?? null, error: result.error?.message ?? `Child workflow ${result.status}` };
    return { success: true, output: runOutput(result) };
  }

  /**
   * Starts taking async jobs, pause timeouts and (on PostgreSQL) the lease sweeper. Recovery of what a
   * previous process left unfinished runs in the background: the server already answers meanwhile.
   */
  startWorkers(): void {
    const { queue, log, config, db } = this.deps;
    queue.work((id) => this.worker.runJob(id));
    this.pauses.start();
    // Tried again while the database is away (recovering twice only dispatches twice, which the leases absorb).
    retryWhileUnavailable(() => this.worker.recover(db.mode === 'pglite'), { deadlineMs: config.jobLeaseMs })
      .then((recovered) => {
        if (recovered > 0) log.info({ recovered }, 'resuming unfinished async runs');
      })
      .catch((err: unknown) => log.error({ err }, 'recovering unfinished async runs failed; the job sweep tries again'));
    this.worker.startSweep();
  }

  /** Runs one async job in this process (the CLI runs its own outside a server); see AsyncRunWorker.runJob. */
  runJob(executionId: string): Promise<void> {
    return this.worker.runJob(executionId);
  }

  /** Re-enqueues jobs left behind (see AsyncRunWorker.recover). */
  recover(includeAllProcessing: boolean): Promise<number> {
    return this.worker.recover(includeAllProcessing);
  }

  /** Lets running jobs finish for 5 s, then aborts the rest (they resume after a restart) and waits for them. */
  async close(): Promise<void> {
    this.worker.stopSweep();
    this.pauses.stop();
    await this.deps.queue.close(5_000);
    this.worker.abortRuns();
    await this.deps.queue.close(1_000);
  }
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

/** A finished run whose result the database would not store: failed, with no output or trace. */
function unstoredResult(result: RunResult): RunResult {
  const { response: _response, pausePoints: _points, ...rest } = result;
  return { ...rest, status: 'failed', output: null, trace: [], error: { message: 'The run ended but its result could not be stored; it is recorded as failed without its output' } };
}
