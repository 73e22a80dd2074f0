// Human in the loop: pause records, the resume queue and its runs. Over 450 lines: the resume's life (admit,
// claim, run, record, hand to the next) is kept in one place on purpose; claim leases live in
// resume-claims.ts, the timeout sweep in pause-timeouts.ts and the SQL in pause-store.ts.
import type { Logger } from 'pino';
import type { Database, Queryable } from '../db/database.js';
import type { CompiledGraph, PausePoint, RunResult, StepRecord, StepRecording } from '../engine/index.js';
import { HttpError } from '../http/errors.js';
import type { JobQueue } from '../queue/port.js';
import type { WorkflowService } from '../workflows/service.js';
import * as ps from './pause-store.js';
import { nextTimeout, type PausedRow, type PointMap, type QueueRow, type ResumeLinks, type ResumeStatus, type StoredPoint } from './pause-store.js';
import { holdResumeClaim, releaseLapsedResumeClaims } from './resume-claims.js';
import { publicExecutionId, storedExecutionIds } from './execution-ids.js';
import { DEFAULT_MAX_PAUSE_POINTS } from '../engine/node.js';
import { describedSize } from '../engine/json-size.js';
import { failedResult, finishedFrom } from './run-options.js';
import { fireTimeouts } from './pause-timeouts.js';
import { formFields, validateSubmission } from './resume-input.js';
import type { RunContext } from './run-context.js';
import * as store from './store.js';

export type { ResumeLinks, ResumeStatus } from './pause-store.js';

export interface PauseContext {
  executionId: string; workspaceId: string; workflowId: string; versionId: string; mode: 'sync' | 'async';
  billedAccount: string; input: Record<string, unknown>; baseUrl: string;
  /** The run answered as a stream (a sync run): its resumes answer as one too (see `resume`). */
  streamed?: boolean;
}

/** What pauses need from the runs service: its one run path, the run charge, plans and the link base. */
export interface PauseDeps {
  db: Database;
  log: Logger;
  queue: JobQueue;
  workflows: WorkflowService;
  startResumed(run: RunContext, graph: CompiledGraph, opts: { input: Record<string, unknown>; mode: 'sync' | 'async'; signal: AbortSignal;
    recorded?: ReadonlyMap<string, StepRecord>; onStep?: (s: StepRecord, how: StepRecording) => Promise<void> }): Promise<RunResult>;
  charge(q: Queryable, account: string, executionId: string): Promise<unknown>;
  /**
   * Admits a resume the service starts itself (a timeout's approval) like an async run of the paused run's
   * account: usage cap, rate, a concurrency slot. Throws the refusal (an HttpError) when it may not run now.
   */
  admitResume(paused: PausedRow): Promise<{ slot: string | null; release(): Promise<void> }>;
  planOf(workspaceId: string): Promise<string>;
  baseUrl(): string;
  /** Registers a run of this process under its execution id, so a cancel reaches it (see InFlightRuns). */
  track(executionId: string, parent: AbortSignal): { signal: AbortSignal; end: () => void };
  /** Lease of a resume claim (the job lease): a claim not renewed for this long is released. */
  leaseMs: number;
  /**
   * JSON bytes a run's pause answer and its record's pause points may each take (WEFT_MAX_RUN_RESULT_BYTES;
   * default 4 MiB): docs/architecture.md, Where limits are enforced.
   */
  maxResultBytes?: number;
  /** Pause points one run's record may hold, resumed ones included (WEFT_MAX_PAUSE_POINTS; default 100). */
  maxPausePoints?: number;
}

/** The configuration's defaults of the limits a pause record keeps to, for a PauseService not given them. */
const PAUSE_LIMITS = { maxResultBytes: 4 * 1024 * 1024, maxPausePoints: DEFAULT_MAX_PAUSE_POINTS };

/**
 * A pause the record may not hold: past the pause point limit, or an answer or point map past the result
 * limit. Nothing of it is written. A resume that pauses so fails (finishEntry); a first pause is measured
 * before it gets here (capResult, the engine's pause point limit), so this refuses it only when its resume
 * links took more room than capResult allowed them.
 */
export class PauseLimitError extends HttpError {
  constructor(message: string) {
    super(422, message);
    this.name = 'PauseLimitError';
  }
}

/** How a resume that was admitted answers: queued behind another, running as a job, or finished in the request. */
export type ResumeOutcome =
  | { kind: 'queued'; executionId: string; queuePosition: number }
  | { kind: 'job'; executionId: string }
  | { kind: 'finished'; executionId: string; result: RunResult; output: unknown; streamed: boolean };

export function resumeLinks(baseUrl: string, workflowId: string, executionId: string, contextId: string): ResumeLinks {
  return {
    apiUrl: `${baseUrl}/api/resume/${workflowId}/${publicExecutionId(executionId)}/${encodeURIComponent(contextId)}`,
    uiUrl: `${baseUrl}/resume/${workflowId}/${publicExecutionId(executionId)}`,
    contextId,
    executionId: publicExecutionId(executionId),
    workflowId,
  };
}

/**
 * A pause point's response as the reference service shapes it, in a paused run's output and in its pause
 * record: the block's answer `{data, status, headers}`, its form and resume links in `data`.
 */
export function pauseResponse(p: StoredPoint): { data: Record<string, unknown>; status: number; headers: Record<string, string> } {
  return {
    data: { operation: 'human', ...(p.response as Record<string, unknown>), _resume: p.resumeLinks },
    status: 200,
    headers: { 'Content-Type': 'application/json' },
  };
}

/** The output a paused run answers with: the pause's form and its resume links. */
export function pauseOutput(points: StoredPoint[]): unknown {
  if (points.length === 1 && points[0]) return pauseResponse(points[0]);
  return { pausedBlocks: points.map((p) => pauseResponse(p).data), pauseCount: points.length };
}

function toStored(p: PausePoint, baseUrl: string, workflowId: string, executionId: string): StoredPoint {
  const response = (p.response ?? {}) as Record<string, unknown>;
  const timeoutSeconds = typeof response.timeoutSeconds === 'number' ? response.timeoutSeconds : undefined;
  return {
    contextId: p.contextId,
    blockId: p.blockId,
    key: p.key,
    response: p.response ?? null,
    registeredAt: new Date().toISOString(),
    resumeStatus: 'paused',
    resumeLinks: resumeLinks(baseUrl, workflowId, executionId, p.contextId),
    ...(p.parallelScope ? { parallelScope: p.parallelScope } : {}),
    ...(p.loopScope ? { loopScope: p.loopScope } : {}),
    ...(timeoutSeconds !== undefined
      ? { timeoutAt: new Date(Date.now() + timeoutSeconds * 1000).toISOString(), onTimeout: response.onTimeout === 'approve' ? 'approve' as const : 'fail' as const }
      : {}),
  };
}

function overallStatus(points: PointMap, last: RunResult['status']): string {
  const all = Object.values(points);
  if (last === 'failed' || last === 'timed_out' || last === 'cancelled') return 'failed';
  if (all.some((p) => p.resumeStatus !== 'resumed')) return all.some((p) => p.resumeStatus === 'resumed') ? 'partially_resumed' : 'paused';
  return 'fully_resumed';
}

/** What a resume writes beside its end, in the same transaction (a sync resume: its execution row and charge). */
export type RecordResume = (q: Queryable, result: RunResult, output: unknown) => Promise<void>;

/** A resume whose claim was released (its lease lapsed) before it recorded its end: it records nothing. */
class ClaimReleased extends Error {}


/** Human-in-the-loop: stores paused runs, queues and runs resumes, and fires pause timeouts. */
export class PauseService {
  private timer?: NodeJS.Timeout;

  constructor(private readonly deps: PauseDeps) {}

  private get db(): Database {
    return this.deps.db;
  }

  /**
   * Records a run that paused (first time or again after a resume); returns the pause output. `alsoWrite`
   * runs in the same transaction, before the pause record (which refers to the run's row): what must
   * commit with it, such as the paused run's own row, so neither exists without the other.
   */
  async persistPause(pc: PauseContext, result: RunResult, steps: StepRecord[], alsoWrite?: (q: Queryable, output: unknown) => Promise<void>): Promise<unknown> {
    const points = (result.pausePoints ?? []).map((p) => toStored(p, pc.baseUrl, pc.workflowId, pc.executionId));
    const stepMap = Object.fromEntries(steps.map((s) => [s.key, s]));
    return this.db.tx(async (q) => {
      const existing = await ps.lockPaused(q, pc.executionId);
      if (!existing) {
        const map = Object.fromEntries(points.map((p) => [p.contextId, p]));
        const output = pauseOutput(points);
        this.checkPause(map, output);
        await alsoWrite?.(q, output);
        await ps.insertPaused(q, {
          workspaceId: pc.workspaceId, workflowId: pc.workflowId, executionId: pc.executionId, versionId: pc.versionId, mode: pc.mode,
          billedAccount: pc.billedAccount, input: pc.input, steps: stepMap, points: map,
          metadata: { baseUrl: pc.baseUrl, ...(pc.streamed ? { streamed: true } : {}) }, nextTimeoutAt: nextTimeout(map),
        });
        return output;
      }
      // Paused again during a resume: keep the points we know, add the new ones.
      const map = { ...existing.pause_points };
      let added = 0;
      for (const p of points) {
        if (!map[p.contextId]) {
          map[p.contextId] = p;
          added++;
        }
      }
      const output = pauseOutput(Object.values(map).filter((p) => p.resumeStatus === 'paused'));
      this.checkPause(map, output);
      await alsoWrite?.(q, output);
      await ps.updatePaused(q, existing.id, { points: map, nextTimeoutAt: nextTimeout(map), steps: stepMap, addedPauses: added, status: overallStatus(map, 'paused') });
      return output;
    });
  }

  /**
   * A pause record keeps to the run's limits (docs/architecture.md, Where limits are enforced): at most
   * maxPausePoints points, resumed ones included (each resume may add more), and its answer and its points
   * each within the result limit, measured exactly here, links included. Throws PauseLimitError.
   */
  private checkPause(map: PointMap, output: unknown): void {
    const maxPoints = this.deps.maxPausePoints ?? PAUSE_LIMITS.maxPausePoints;
    const maxBytes = this.deps.maxResultBytes ?? PAUSE_LIMITS.maxResultBytes;
    const count = Object.keys(map).length;
    if (count > maxPoints) {
      throw new PauseLimitError(`The run would hold ${count} pause points, over the limit of ${maxPoints} (WEFT_MAX_PAUSE_POINTS)`);
    }
    for (const [what, value] of [['pause', output], ['pause record', map]] as const) {
      const size = describedSize(value, maxBytes);
      if (size.bytes > maxBytes) {
        throw new PauseLimitError(`The run's ${what} is ${size.text}, over the limit of ${maxBytes} bytes (WEFT_MAX_RUN_RESULT_BYTES)`);
      }
    }
  }

  /** A paused execution of the workspace by the id its callers know. */
  async find(workspaceId: string, workflowId: string, executionId: string): Promise<PausedRow | undefined> {
    return ps.findPaused(this.db, workspaceId, workflowId, storedExecutionIds(executionId, [workspaceId]));
  }

  /** The paused-execution record exactly as the spec shapes it. */
  async record(row: PausedRow): Promise<Record<string, unknown>> {
    const queue = await ps.queueOf(this.db, row.id);
    const entries = queue.map(publicEntry);
    const pending = queue.filter((e) => e.status === 'pending');
    const pausePoints = Object.values(row.pause_points).map((p) => {
      const mine = queue.filter((e) => e.context_id === p.contextId);
      const latest = mine[mine.length - 1];
      const position = pending.findIndex((e) => e.context_id === p.contextId);
      return {
        contextId: p.contextId,
        blockId: p.blockId,
        response: pauseResponse(p),
        pauseKind: 'human',
        registeredAt: p.registeredAt,
        resumeStatus: p.resumeStatus,
        snapshotReady: true,
        resumeLinks: p.resumeLinks,
        queuePosition: position >= 0 ? position + 1 : null,
        latestResumeEntry: latest ? publicEntry(latest) : null,
        ...(p.parallelScope ? { parallelScope: p.parallelScope } : {}),
        ...(p.loopScope ? { loopScope: p.loopScope } : {}),
      };
    });
    return {
      id: row.id,
      workflowId: row.workflow_id,
      executionId: publicExecutionId(row.execution_id),
      status: row.status,
      totalPauseCount: row.total_pause_count,
      resumedCount: row.resumed_count,
      pausedAt: row.paused_at.toISOString(),
      updatedAt: row.updated_at.toISOString(),
      expiresAt: iso(row.expires_at),
      metadata: row.metadata,
      triggerIds: row.trigger_ids,
      pausePoints,
      executionSnapshot: {
        snapshot: JSON.stringify({ versionId: row.version_id, input: row.input, steps: Object.values(row.steps) }),
        triggerIds: row.trigger_ids,
      },
      queue: entries,
    };
  }

  /**
   * Admits a resume of one pause point. Exactly one caller wins a point; while another resume of the
   * same execution runs, the new one waits in the queue.
   */
  async enqueueResume(
    workspaceId: string,
    workflowId: string,
    executionId: string,
    contextId: string,
    rawInput: unknown,
    /** The admission's concurrency slot: a resume queued behind another keeps it until its own job ends. */
    slotToken: string | null = null,
    /** Set by the service itself (a timeout's `timedOut`), added after the form is applied to the input. */
    marks: Record<string, unknown> = {},
  ): Promise<{ entry: QueueRow; paused: PausedRow; queuePosition: number | null }> {
    return this.db.tx(async (q) => {
      const paused = await ps.findPaused(q, workspaceId, workflowId, storedExecutionIds(executionId, [workspaceId]), true);
      if (!paused) throw new HttpError(404, 'Paused execution not found or already resumed');
      if (paused.status !== 'paused' && paused.status !== 'partially_resumed') throw new HttpError(409, 'Paused execution is not resumable');
      const point = paused.pause_points[contextId];
      if (!point) throw new HttpError(404, 'Pause point not found for execution');
      if (point.resumeStatus !== 'paused') throw new HttpError(409, 'Pause point already resumed or in progress');
      const input = { ...validateSubmission(formFields(point), rawInput), ...marks };
      const busy = await ps.activeResumeCount(q, paused.id);
      const claimed = busy === 0;
      const entry = await ps.insertResumeEntry(q, {
        pausedId: paused.id, parentExecutionId: paused.execution_id, contextId, input, claimed, leaseMs: this.deps.leaseMs, slotToken: claimed ? null : slotToken,
      });
      const map = { ...paused.pause_points, [contextId]: { ...point, resumeStatus: (claimed ? 'resuming' : 'queued') as ResumeStatus } };
      await ps.updatePaused(q, paused.id, { points: map, nextTimeoutAt: nextTimeout(map) });
      return { entry, paused, queuePosition: claimed ? null : busy };
    });
  }

  /**
   * The resume use case, for the API and the resume page alike: admits the submission, then either
   * queues it behind a running resume, hands it to the job queue (async runs), or runs it now and
   * commits its execution row with its charge in one transaction (sync runs). A run that answered as a
   * stream resumes as a sync run the legacy API streams (`streamed` on the outcome), or, with
   * `streamedAsJob` (the v2 API, as Sim's), as a job.
   */
  async resume(
    target: { workspaceId: string; workflowId: string; executionId: string; contextId: string },
    input: unknown,
    caller: { apiKeyId: string | null; signal: AbortSignal; slotToken?: string | null; streamedAsJob?: boolean },
  ): Promise<ResumeOutcome> {
    const { entry, paused, queuePosition } = await this.enqueueResume(target.workspaceId, target.workflowId, target.executionId, target.contextId, input, caller.slotToken);
    if (queuePosition !== null) return { kind: 'queued', executionId: entry.new_execution_id, queuePosition };
    const streamed = ps.wasStreamed(paused);
    if (paused.mode === 'async' || (streamed && caller.streamedAsJob)) return { kind: 'job', executionId: await this.enqueueEntryJob(paused, entry, caller.slotToken) };
    // The claim's lease is renewed while the run lasts: a process that dies here leaves a claim that lapses
    // and is released (resume-claims.ts); a holder that lost its claim stops and records nothing.
    const lease = holdResumeClaim(this.db, this.deps.log, entry.id, this.deps.leaseMs);
    const tracked = this.deps.track(entry.new_execution_id, AbortSignal.any([caller.signal, lease.signal]));
    // The resume's own execution row and its charge commit with the end of the resume (the pause point
    // resumed, the entry completed): a crash between the two would spend the point and leave no run.
    const record: RecordResume = async (q, result, output) => {
      await store.insertFinished(q, {
        id: entry.new_execution_id, workspaceId: paused.workspace_id, workflowId: paused.workflow_id, versionId: paused.version_id, mode: 'sync',
        trigger: 'resume', status: 'processing', billedAccount: paused.billed_account, apiKeyId: caller.apiKeyId, input: {},
        resumeEntryId: entry.id,
      }, { ...finishedFrom(result), output });
      await this.deps.charge(q, paused.billed_account, entry.new_execution_id);
    };
    const { result, output, lost } = await this.runEntry(entry.id, { signal: tracked.signal, record }).finally(() => {
      tracked.end();
      lease.stop();
    });
    if (lost) throw new HttpError(409, 'The resume was interrupted: its claim lapsed and was released; resume the pause point again');
    return { kind: 'finished', executionId: entry.new_execution_id, result, output, streamed };
  }

  /** Creates the durable async job that runs a claimed resume entry and enqueues it (with the admission's slot, freed when it ends). */
  async enqueueEntryJob(paused: PausedRow, entry: QueueRow, slotToken: string | null = null): Promise<string> {
    // The job and the end of the claim's own lease commit together: from then on the job's lease covers it.
    await this.db.tx(async (q) => {
      await store.claimExecution(q, {
        id: entry.new_execution_id, workspaceId: paused.workspace_id, workflowId: paused.workflow_id, versionId: paused.version_id,
        mode: 'async', trigger: 'resume', status: 'queued', billedAccount: paused.billed_account, apiKeyId: null, input: {},
        resumeEntryId: entry.id, linkBase: typeof paused.metadata.baseUrl === 'string' ? paused.metadata.baseUrl : null, slotToken,
      });
      if (!(await ps.endResumeLease(q, entry.id))) throw new HttpError(409, 'The resume was interrupted: its claim lapsed and was released; resume the pause point again');
    });
    await this.deps.queue.enqueue(entry.new_execution_id);
    return entry.new_execution_id;
  }

  /**
   * Runs a claimed resume: replays every completed step, records the submission as the human
   * block's output, and continues. Updates the pause record and the original execution, then
   * starts the next queued resume of the same execution.
   */
  async runEntry(
    entryId: string,
    opts: {
      signal: AbortSignal; shutdown?: AbortSignal; recorded?: ReadonlyMap<string, StepRecord>; onStep?: (s: StepRecord, how: StepRecording) => Promise<void>;
      /** Written in the transaction that ends the resume (not when its claim was lost). */
      record?: RecordResume;
    },
  ): Promise<{ result: RunResult; output: unknown; lost?: boolean }> {
    const entry = await ps.findResumeEntry(this.db, entryId);
    if (!entry) throw new Error(`Resume entry ${entryId} not found`);
    const paused = await ps.findPausedById(this.db, entry.paused_execution_id);
    const version = paused ? await this.deps.workflows.loadVersion(paused.version_id) : undefined;
    const point = paused?.pause_points[entry.context_id];
    if (!paused || !version || !point) throw new Error('The paused execution or its workflow version no longer exists');
    const recorded = new Map<string, StepRecord>(Object.entries(paused.steps));
    for (const [k, v] of opts.recorded ?? []) recorded.set(k, v);
    recorded.set(point.key, { key: point.key, blockId: point.blockId, output: entry.resume_input });
    const steps: StepRecord[] = [{ key: point.key, blockId: point.blockId, output: entry.resume_input }];
    const run: RunContext = {
      workspaceId: paused.workspace_id, billedAccount: paused.billed_account, plan: await this.deps.planOf(paused.workspace_id),
      executionId: entry.new_execution_id,
    };
    const result = await this.deps.startResumed(run, this.deps.workflows.compileVersion(version), {
      input: paused.input,
      mode: 'async',
      signal: opts.signal,
      recorded,
      onStep: async (s, how) => {
        steps.push(s);
        await opts.onStep?.(s, how);
      },
    });
    // Shutting down: the job row stays unfinished and resumes after the restart.
    if (opts.shutdown?.aborted && result.status === 'cancelled') return { result, output: null };
    // The run was cancelled with its pause meanwhile: this resume ends, the run's state stays cancelled.
    if ((await ps.findPausedById(this.db, paused.id))?.status === 'cancelled') {
      const output = result.response ?? result.output ?? null;
      await this.db.tx(async (q) => {
        await ps.completeResumeEntry(q, entry.id, 'Run cancelled');
        await opts.record?.(q, result, output);
      });
      return { result, output };
    }
    return this.finishEntry(paused, entry, result, steps, opts.record);
  }

  /**
   * Records a finished resume, unless its claim was released meanwhile (`lost`: it records nothing). A resume
   * that paused past what the pause record may hold fails instead (its result is returned failed).
   */
  private async finishEntry(
    paused: PausedRow, entry: QueueRow, ran: RunResult, steps: StepRecord[], record?: RecordResume,
  ): Promise<{ result: RunResult; output: unknown; lost?: boolean }> {
    const baseUrl = typeof paused.metadata.baseUrl === 'string' ? paused.metadata.baseUrl : this.deps.baseUrl();
    let result = ran;
    let output: unknown = result.response ?? result.output ?? null;
    if (result.status === 'paused') {
      try {
        output = await this.persistPause({
          executionId: paused.execution_id, workspaceId: paused.workspace_id, workflowId: paused.workflow_id, versionId: paused.version_id,
          mode: paused.mode, billedAccount: paused.billed_account, input: paused.input, baseUrl,
        }, result, steps, async (q) => {
          if (!(await ps.lockClaimedResume(q, entry.id))) throw new ClaimReleased();
        });
      } catch (err) {
        if (err instanceof ClaimReleased) return { result, output, lost: true };
        if (!(err instanceof PauseLimitError)) throw err;
        result = failedResult(result, err.message);
        output = null;
      }
    }
    const failed = result.status !== 'completed' && result.status !== 'paused';
    const next = await this.db.tx(async (q) => {
      const row = await ps.lockPaused(q, paused.execution_id);
      if (row && !(await ps.lockClaimedResume(q, entry.id))) return 'lost' as const;
      await record?.(q, result, output);
      const point = row?.pause_points[entry.context_id];
      if (!row || !point) return undefined;
      const map: PointMap = { ...row.pause_points, [entry.context_id]: { ...point, resumeStatus: failed ? 'failed' : 'resumed' } };
      const resumed = Object.values(map).filter((p) => p.resumeStatus === 'resumed').length;
      const status = overallStatus(map, result.status);
      await ps.updatePaused(q, row.id, {
        // A failed run's timeouts have nothing left to do (pause-timeouts.ts would fail it again).
        points: map, nextTimeoutAt: status === 'failed' ? null : nextTimeout(map), steps: Object.fromEntries(steps.map((s) => [s.key, s])),
        resumedCount: resumed, status,
      });
      await ps.completeResumeEntry(q, entry.id, failed ? (result.error?.message ?? result.status) : null);
      // The original execution carries the latest state of the whole run.
      const finished = finishedFrom(result);
      await store.updateRunState(q, paused.execution_id, { status: finished.status === 'cancelled' ? 'failed' : finished.status, output, error: finished.error, errorBlock: finished.errorBlock });
      // Hand the execution to the next queued resume, in order.
      const claimed = await ps.claimNextResume(q, row.id, this.deps.leaseMs);
      const nextPoint = claimed ? map[claimed.context_id] : undefined;
      if (!claimed || !nextPoint) return undefined;
      const points: PointMap = { ...map, [claimed.context_id]: { ...nextPoint, resumeStatus: 'resuming' } };
      await ps.updatePaused(q, row.id, { points, nextTimeoutAt: status === 'failed' ? null : nextTimeout(points) });
      return { row: { ...row, pause_points: points }, entry: claimed };
    });
    if (next === 'lost') return { result, output, lost: true };
    if (next) await this.enqueueEntryJob(next.row, next.entry, next.entry.slot_token);
    return { result, output };
  }

  /** Gives up on pauses whose timeout passed: approve with the form's defaults, or fail the run (pause-timeouts.ts). */
  fireTimeouts(): Promise<number> {
    return fireTimeouts({
      db: this.db,
      admitResume: (row) => this.deps.admitResume(row),
      enqueueResume: (...args) => this.enqueueResume(...args),
      enqueueEntryJob: (paused, entry, slotToken) => this.enqueueEntryJob(paused, entry, slotToken),
    });
  }

  /** Releases lapsed resume claims and hands the resumes queued behind them to jobs (see resume-claims.ts). */
  async releaseLapsedClaims(all: boolean): Promise<void> {
    for (const { paused, entry } of await releaseLapsedResumeClaims(this.db, { all, leaseMs: this.deps.leaseMs })) {
      await this.enqueueEntryJob(paused, entry, entry.slot_token);
    }
  }

  start(intervalMs = 1000): void {
    // Embedded: this process holds the data directory, so every claim left leased at start-up is a dead one's.
    let all = this.db.mode === 'pglite';
    // A sweep still running when the next tick comes is not joined by a second one (docs/architecture.md,
    // Pause lifecycle): two sweeps would fight over the same records' locks and each pass would only grow.
    const timeouts = notOverlapping(() => this.fireTimeouts(), (err) => this.deps.log.warn({ err }, 'pause timeout sweep failed'));
    const claims = notOverlapping((everyLease: boolean) => this.releaseLapsedClaims(everyLease),
      (err) => this.deps.log.warn({ err }, 'releasing lapsed resume claims failed'));
    const tick = () => {
      timeouts();
      if (claims(all)) all = false;
    };
    tick();
    this.timer = setInterval(tick, intervalMs);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
  }
}

/**
 * Wraps a periodic task so that a call while the previous one still runs does nothing (false); errors go to
 * `onError`.
 */
function notOverlapping<A extends unknown[]>(task: (...args: A) => Promise<unknown>, onError: (err: unknown) => void): (...args: A) => boolean {
  let running = false;
  return (...args) => {
    if (running) return false;
    running = true;
    task(...args).catch(onError).finally(() => {
      running = false;
    });
    return true;
  };
}

const iso = (d: Date | null) => (d ? d.toISOString() : null);

function publicEntry(e: QueueRow) {
  return {
    id: e.id,
    pausedExecutionId: e.paused_execution_id,
    parentExecutionId: publicExecutionId(e.parent_execution_id),
    newExecutionId: e.new_execution_id,
    contextId: e.context_id,
    resumeInput: e.resume_input ?? null,
    status: e.status,
    queuedAt: e.queued_at.toISOString(),
    claimedAt: iso(e.claimed_at),
    completedAt: iso(e.completed_at),
    failureReason: e.failure_reason,
  };
}

