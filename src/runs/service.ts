import type { AppContext } from '../context.js';
import type { Database } from '../db/database.js';
import { runWorkflow, type EnginePorts, type RunResult, type StepRecord } from '../engine/index.js';
import { HttpError } from '../http/errors.js';
import { newId } from '../ids.js';
import type { Admission, LimitsService } from '../limits/service.js';
import type { JobQueue } from '../queue/port.js';
import { activeVersion, compileVersion, loadVersion } from '../workflows/service.js';
import { findWorkflow, type WorkflowRow } from '../workflows/store.js';
import * as store from './store.js';
import type { PauseService } from './pauses.js';
import type { ExecutionRow, FinishedExecution, NewExecution } from './store.js';

const MAX_DEPTH = 10;

export interface RunContext {
  workspaceId: string;
  billedAccount: string;
  plan: string;
}

/** Builds the engine's ports for one run; areas add their own (tables, ai) through `extraPorts`. */
export type PortFactory = (run: RunContext, self: ExecutionService) => EnginePorts;

export interface Admitted {
  workflow: WorkflowRow;
  versionId: string;
  admission: Admission;
}

/** Runs deployed workflows: sync in the request, async through the durable job rows and the queue. */
export class ExecutionService {
  private readonly shutdown = new AbortController();
  /** Set by the area once it exists (pauses need this service to run resumes). */
  pauses?: PauseService;

  constructor(
    private readonly ctx: AppContext,
    private readonly queue: JobQueue,
    readonly limits: LimitsService,
    private readonly ports: PortFactory,
  ) {}

  get db(): Database {
    return this.ctx.db;
  }

  portsFor(run: RunContext): EnginePorts {
    return this.ports(run, this);
  }

  baseUrl(): string {
    return this.ctx.config.baseUrl ?? this.ctx.publicUrl ?? `http://localhost:${this.ctx.config.port}`;
  }

  /** Gates in the reference's order after the workflow is found and authorized: deployed, then limits. */
  async admit(workflow: WorkflowRow, run: RunContext, mode: 'sync' | 'async'): Promise<Admitted> {
    const version = await activeVersion(this.db, workflow);
    if (!version) throw new HttpError(403, 'Workflow is not deployed');
    const admission = await this.limits.admitExecution(run.billedAccount, run.plan, mode);
    return { workflow, versionId: version.id, admission };
  }

  async runSync(
    admitted: Admitted,
    run: RunContext,
    input: Record<string, unknown>,
    opts: { executionId?: string; apiKeyId: string | null; trigger: string; signal: AbortSignal; baseUrl: string },
  ): Promise<{ executionId: string; result: RunResult; output: unknown }> {
    const executionId = opts.executionId ?? newId();
    const base: NewExecution = {
      id: executionId, workspaceId: run.workspaceId, workflowId: admitted.workflow.id, versionId: admitted.versionId,
      mode: 'sync', trigger: opts.trigger, status: 'processing', billedAccount: run.billedAccount, apiKeyId: opts.apiKeyId, input,
    };
    let stopLease = () => {};
    try {
      // A caller-chosen id is claimed before the run so a concurrent repeat cannot start a second one.
      // The claimed row holds a lease while the run lasts: a run whose process died is closed by the sweep.
      if (opts.executionId) {
        if (!(await store.claimExecution(this.db, base))) throw executionIdConflict(executionId);
        stopLease = await this.holdLease(executionId);
      }
      const version = await loadVersion(this.db, admitted.versionId);
      if (!version) throw new HttpError(404, 'Workflow not found');
      const graph = compileVersion(version);
      const steps: StepRecord[] = [];
      const result = await runWorkflow(graph, {
        input,
        ports: this.ports(run, this),
        signal: opts.signal,
        timeoutMs: this.limits.plan(run.plan).syncTimeoutSeconds * 1000,
        depth: 0,
        // Kept in memory: only a pause needs them (its snapshot).
        onStep: async (s) => {
          steps.push(s);
        },
      });
      const finished = finishedFrom(result);
      // The run's log and its base charge commit together: one disk flush per run.
      await this.db.tx(async (q) => {
        if (opts.executionId) await store.finishExecution(q, executionId, finished);
        else if (!(await store.insertFinished(q, base, finished))) throw executionIdConflict(executionId);
        await this.limits.chargeRun(run.billedAccount, executionId, q);
      });
      let output: unknown = result.response ? result.response.data : result.output;
      if (result.status === 'paused' && this.pauses) {
        output = await this.pauses.persistPause({
          executionId, workspaceId: run.workspaceId, workflowId: admitted.workflow.id, versionId: admitted.versionId,
          mode: 'sync', billedAccount: run.billedAccount, input, baseUrl: opts.baseUrl,
        }, result, steps);
        await store.setOutput(this.db, executionId, output);
      }
      return { executionId, result, output };
    } finally {
      stopLease();
      await admitted.admission.release();
    }
  }

  /** Takes the row's lease (unless already held) and renews it until the returned function is called. */
  private async holdLease(executionId: string, alreadyHeld = false): Promise<() => void> {
    const leaseMs = this.ctx.config.jobLeaseMs;
    if (!alreadyHeld) await store.renewLease(this.db, executionId, leaseMs);
    const timer = setInterval(() => {
      store.renewLease(this.db, executionId, leaseMs).catch((err: unknown) => this.ctx.log.warn({ err, executionId }, 'lease renewal failed'));
    }, leaseMs / 3);
    return () => clearInterval(timer);
  }

  async enqueue(
    admitted: Admitted,
    run: RunContext,
    input: Record<string, unknown>,
    opts: { executionId?: string; apiKeyId: string | null; trigger: string },
  ): Promise<string> {
    const executionId = opts.executionId ?? newId();
    const claimed = await store.claimExecution(this.db, {
      id: executionId, workspaceId: run.workspaceId, workflowId: admitted.workflow.id, versionId: admitted.versionId,
      mode: 'async', trigger: opts.trigger, status: 'queued', billedAccount: run.billedAccount, apiKeyId: opts.apiKeyId, input,
      slotToken: admitted.admission.slot,
    });
    if (!claimed) {
      await admitted.admission.release();
      throw executionIdConflict(executionId);
    }
    await this.queue.enqueue(executionId);
    return executionId;
  }

  /** The worker: runs one async job, recording each completed block before its dependants start. */
  async runJob(executionId: string): Promise<void> {
    if (this.shutdown.signal.aborted) return;
    const row = await store.leaseJob(this.db, executionId, this.ctx.config.jobLeaseMs);
    if (!row) return; // finished, or another worker holds it
    const stopLease = await this.holdLease(executionId, true); // leaseJob took it
    try {
      if (row.resume_entry_id && this.pauses) {
        const { result, output } = await this.pauses.runEntry(row.resume_entry_id, {
          signal: this.shutdown.signal,
          recorded: await this.recordedSteps(row),
          onStep: (step) => store.recordStep(this.db, row.id, step),
        });
        if (this.shutdown.signal.aborted && result.status === 'cancelled') return;
        await this.finish(row, { ...finishedFrom(result), output });
        return;
      }
      const result = await this.runRow(row);
      if (this.shutdown.signal.aborted && result.status === 'cancelled') return; // resumes after restart
      const finished = finishedFrom(result);
      if (result.status === 'paused' && this.pauses) {
        finished.output = await this.pauses.persistPause({
          executionId, workspaceId: row.workspace_id, workflowId: row.workflow_id, versionId: row.version_id as string,
          mode: 'async', billedAccount: row.billed_account, input: row.input, baseUrl: this.baseUrl(),
        }, result, [...(await store.loadSteps(this.db, row.id)).values()]);
      }
      await this.finish(row, finished);
    } catch (err) {
      if (this.shutdown.signal.aborted) return;
      this.ctx.log.error({ err, executionId }, 'async run crashed');
      await store.finishExecution(this.db, executionId, {
        status: 'failed', output: null, error: `Internal error: ${(err as Error).message}`, errorBlock: null, trace: [],
        startedAt: row.started_at ?? new Date(), endedAt: new Date(), durationMs: 0,
      });
    } finally {
      stopLease();
      // The slot taken at admission (maybe by another process) is freed by whoever ends the run.
      if (row.slot_token && !this.shutdown.signal.aborted) {
        await this.limits.releaseSlot(row.billed_account, row.slot_token).catch(() => undefined);
      }
    }
  }

  /** Steps an earlier attempt recorded; a first attempt has none, so it skips the read. */
  private async recordedSteps(row: ExecutionRow): Promise<Map<string, StepRecord>> {
    return row.attempts > 1 ? store.loadSteps(this.db, row.id) : new Map();
  }

  private readonly plans = new Map<string, { plan: string; until: number }>();

  /** A workspace's plan, reused for a few seconds (it only sets timeouts and limits of runs). */
  async workspacePlan(workspaceId: string): Promise<string> {
    const hit = this.plans.get(workspaceId);
    if (hit && hit.until > Date.now()) return hit.plan;
    const plan = (await this.db.query<{ plan: string }>('SELECT plan FROM workspaces WHERE id = $1', [workspaceId]))[0]?.plan ?? 'free';
    if (this.plans.size > 10_000) this.plans.clear();
    this.plans.set(workspaceId, { plan, until: Date.now() + 5_000 });
    return plan;
  }

  /** Ends an async run: its final state and its base charge commit together. */
  private async finish(row: ExecutionRow, finished: FinishedExecution): Promise<void> {
    await this.db.tx(async (q) => {
      await store.finishExecution(q, row.id, finished);
      await this.limits.chargeRun(row.billed_account, row.id, q);
    });
  }

  private async runRow(row: ExecutionRow): Promise<RunResult> {
    const version = row.version_id ? await loadVersion(this.db, row.version_id) : undefined;
    if (!version) throw new Error('The deployed version of this run no longer exists');
    const graph = compileVersion(version);
    const recorded = await this.recordedSteps(row);
    const plan = await this.workspacePlan(row.workspace_id);
    const run: RunContext = { workspaceId: row.workspace_id, billedAccount: row.billed_account, plan };
    return runWorkflow(graph, {
      input: row.input,
      ports: this.ports(run, this),
      signal: this.shutdown.signal,
      timeoutMs: this.limits.plan(plan).asyncTimeoutSeconds * 1000,
      recorded,
      onStep: (step: StepRecord) => store.recordStep(this.db, row.id, step),
      depth: 0,
    });
  }

  /** Runs another deployed workflow of the same workspace inside a run (the workflow block). */
  async runChild(run: RunContext, workflowId: string, input: Record<string, unknown>, depth: number, signal: AbortSignal) {
    if (depth > MAX_DEPTH) return { success: false, output: null, error: `Child workflows nest deeper than ${MAX_DEPTH} levels` };
    const w = /^[0-9a-f-]{36}$/i.test(workflowId) ? await findWorkflow(this.db, run.workspaceId, workflowId) : undefined;
    if (!w) return { success: false, output: null, error: `Workflow ${workflowId} not found` };
    const version = await activeVersion(this.db, w);
    if (!version) return { success: false, output: null, error: `Workflow "${w.name}" is not deployed` };
    const result = await runWorkflow(compileVersion(version), { input, ports: this.ports(run, this), signal, depth });
    if (result.status !== 'completed') return { success: false, output: result.output ?? null, error: result.error?.message ?? `Child workflow ${result.status}` };
    return { success: true, output: result.response ? result.response.data : result.output };
  }

  /** Re-enqueues jobs left behind: all unfinished ones at embedded start-up, expired leases otherwise. */
  async recover(includeAllProcessing: boolean): Promise<number> {
    // Embedded mode: this process holds the data directory, so every lease left behind is a dead one,
    // and so is every sync run still marked running. Shared databases go by the leases.
    if (includeAllProcessing) await store.releaseLeases(this.db);
    await store.failInterruptedSyncRuns(this.db, includeAllProcessing);
    const ids = await store.pendingJobs(this.db, includeAllProcessing, 10_000);
    for (const id of ids) await this.queue.enqueue(id);
    return ids.length;
  }

  /** Lets running jobs finish for 5 s, then aborts the rest (they resume after a restart) and waits for them. */
  async close(): Promise<void> {
    await this.queue.close(5_000);
    this.shutdown.abort();
    await this.queue.close(1_000);
  }
}

export function executionIdConflict(executionId: string): HttpError {
  return new HttpError(409, 'Execution ID has already been used', { code: 'EXECUTION_ID_CONFLICT', executionId });
}

export function finishedFrom(result: RunResult): FinishedExecution {
  const status = result.status === 'completed' ? 'completed'
    : result.status === 'paused' ? 'paused'
    : result.status === 'cancelled' ? 'cancelled' : 'failed';
  return {
    status,
    output: result.response ?? result.output ?? null,
    error: result.error?.message ?? (result.status === 'timed_out' ? 'Execution timed out' : null),
    errorBlock: result.error?.blockId ?? null,
    trace: result.trace,
    startedAt: new Date(result.startedAt),
    endedAt: new Date(result.endedAt),
    durationMs: result.durationMs,
  };
}
