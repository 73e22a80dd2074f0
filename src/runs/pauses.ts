import type { AppContext } from '../context.js';
import type { Queryable } from '../db/database.js';
import { runWorkflow, type PausePoint, type RunResult, type StepRecord } from '../engine/index.js';
import { HttpError } from '../http/errors.js';
import { newId } from '../ids.js';
import type { JobQueue } from '../queue/port.js';
import { compileVersion, loadVersion } from '../workflows/service.js';
import type { ExecutionService, RunContext } from './service.js';

export type ResumeStatus = 'paused' | 'queued' | 'resuming' | 'resumed' | 'failed';

interface StoredPoint {
  contextId: string;
  blockId: string;
  /** The engine's step key of the human block: the resumed output is recorded under it. */
  key: string;
  response: unknown;
  registeredAt: string;
  resumeStatus: ResumeStatus;
  resumeLinks: ResumeLinks;
  parallelScope?: PausePoint['parallelScope'];
  loopScope?: PausePoint['loopScope'];
  /** When the pause gives up waiting, and what then happens. */
  timeoutAt?: string;
  onTimeout?: 'approve' | 'fail';
}

export interface ResumeLinks { apiUrl: string; uiUrl: string; contextId: string; executionId: string; workflowId: string }

interface PausedRow {
  id: string; workspace_id: string; workflow_id: string; execution_id: string; version_id: string; mode: 'sync' | 'async';
  billed_account: string; status: string; input: Record<string, unknown>; steps: Record<string, StepRecord>;
  pause_points: Record<string, StoredPoint>; total_pause_count: number; resumed_count: number;
  metadata: Record<string, unknown>; trigger_ids: string[]; paused_at: Date; updated_at: Date; expires_at: Date | null;
}

interface QueueRow {
  id: string; paused_execution_id: string; parent_execution_id: string; new_execution_id: string; context_id: string;
  resume_input: unknown; status: 'pending' | 'claimed' | 'completed' | 'failed'; queued_at: Date; claimed_at: Date | null;
  completed_at: Date | null; failure_reason: string | null;
}

interface FormField { name: string; type: string; required?: boolean; default?: unknown }

export interface PauseContext {
  executionId: string; workspaceId: string; workflowId: string; versionId: string; mode: 'sync' | 'async';
  billedAccount: string; input: Record<string, unknown>; baseUrl: string;
}

const iso = (d: Date | null) => (d ? d.toISOString() : null);

export function resumeLinks(baseUrl: string, workflowId: string, executionId: string, contextId: string): ResumeLinks {
  return {
    apiUrl: `${baseUrl}/api/resume/${workflowId}/${executionId}/${encodeURIComponent(contextId)}`,
    uiUrl: `${baseUrl}/resume/${workflowId}/${executionId}`,
    contextId,
    executionId,
    workflowId,
  };
}

/** The output a paused run answers with: the pause's form and its resume links. */
export function pauseOutput(points: StoredPoint[]): unknown {
  const one = (p: StoredPoint) => ({
    data: { operation: 'human', ...(p.response as Record<string, unknown>), _resume: p.resumeLinks },
    status: 200,
    headers: {},
  });
  if (points.length === 1) return one(points[0]);
  return { pausedBlocks: points.map((p) => one(p).data), pauseCount: points.length };
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

function nextTimeout(points: Record<string, StoredPoint>): string | null {
  const due = Object.values(points).filter((p) => p.resumeStatus === 'paused' && p.timeoutAt).map((p) => p.timeoutAt as string).sort();
  return due[0] ?? null;
}

function overallStatus(points: Record<string, StoredPoint>, last: RunResult['status']): string {
  const all = Object.values(points);
  if (last === 'failed' || last === 'timed_out' || last === 'cancelled') return 'failed';
  if (all.some((p) => p.resumeStatus !== 'resumed')) return all.some((p) => p.resumeStatus === 'resumed') ? 'partially_resumed' : 'paused';
  return 'fully_resumed';
}

/** Checks a resume submission against the pause's form; coerces like the start block. */
export function validateSubmission(fields: FormField[], input: unknown): Record<string, unknown> {
  if (input !== undefined && input !== null && (typeof input !== 'object' || Array.isArray(input))) {
    throw new HttpError(400, 'Resume input must be an object', { details: [{ path: ['input'], message: 'Expected an object' }] });
  }
  const given = (input ?? {}) as Record<string, unknown>;
  const out: Record<string, unknown> = { ...given };
  const details: { path: string[]; message: string }[] = [];
  for (const f of fields) {
    let v = given[f.name];
    if (v === undefined || v === null || v === '') {
      if (f.default !== undefined) out[f.name] = f.default;
      else if (f.required) details.push({ path: ['input', f.name], message: `Field "${f.name}" is required` });
      continue;
    }
    const fail = () => details.push({ path: ['input', f.name], message: `Field "${f.name}" must be ${f.type === 'array' ? 'an array' : `a ${f.type}`}` });
    switch (f.type) {
      case 'number': {
        const n = typeof v === 'number' ? v : typeof v === 'string' && v.trim() !== '' ? Number(v) : NaN;
        if (!Number.isFinite(n)) fail();
        else out[f.name] = n;
        break;
      }
      case 'boolean':
        if (v === 'true') v = true;
        if (v === 'false') v = false;
        if (typeof v !== 'boolean') fail();
        else out[f.name] = v;
        break;
      case 'object':
      case 'array':
        if (typeof v === 'string') {
          try {
            v = JSON.parse(v);
          } catch {
            // judged below
          }
        }
        if (f.type === 'array' ? !Array.isArray(v) : typeof v !== 'object' || v === null || Array.isArray(v)) fail();
        else out[f.name] = v;
        break;
      case 'string':
        if (typeof v !== 'string') fail();
        break;
      default:
        break;
    }
  }
  if (details.length) throw new HttpError(400, details[0].message, { details });
  return out;
}

/** Human-in-the-loop: stores paused runs, queues and runs resumes, and fires pause timeouts. */
export class PauseService {
  private timer?: NodeJS.Timeout;

  constructor(
    private readonly ctx: AppContext,
    private readonly executions: ExecutionService,
    private readonly queue: JobQueue,
  ) {}

  private get db() {
    return this.ctx.db;
  }

  /** Records a run that paused (first time or again after a resume); returns the pause output. */
  async persistPause(pc: PauseContext, result: RunResult, steps: StepRecord[]): Promise<unknown> {
    const points = (result.pausePoints ?? []).map((p) => toStored(p, pc.baseUrl, pc.workflowId, pc.executionId));
    const stepMap = Object.fromEntries(steps.map((s) => [s.key, s]));
    return this.db.tx(async (q) => {
      const existing = await this.lock(q, pc.executionId);
      if (!existing) {
        const map = Object.fromEntries(points.map((p) => [p.contextId, p]));
        await q.query(
          `INSERT INTO paused_executions (id, workspace_id, workflow_id, execution_id, version_id, mode, billed_account, status,
             input, steps, pause_points, total_pause_count, metadata, next_timeout_at)
           VALUES ($1, $2, $3, $4, $5, $6, $7, 'paused', $8, $9, $10, $11, $12, $13)`,
          [newId(), pc.workspaceId, pc.workflowId, pc.executionId, pc.versionId, pc.mode, pc.billedAccount, JSON.stringify(pc.input),
            JSON.stringify(stepMap), JSON.stringify(map), points.length, JSON.stringify({ baseUrl: pc.baseUrl }), nextTimeout(map)],
        );
        return pauseOutput(points);
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
      await q.query(
        `UPDATE paused_executions SET steps = steps || $2::jsonb, pause_points = $3, total_pause_count = total_pause_count + $4,
                status = $5, next_timeout_at = $6, updated_at = date_trunc('milliseconds', clock_timestamp()) WHERE id = $1`,
        [existing.id, JSON.stringify(stepMap), JSON.stringify(map), added, overallStatus(map, 'paused'), nextTimeout(map)],
      );
      return pauseOutput(Object.values(map).filter((p) => p.resumeStatus === 'paused'));
    });
  }

  private async lock(q: Queryable, executionId: string): Promise<PausedRow | undefined> {
    return (await q.query<PausedRow>('SELECT * FROM paused_executions WHERE execution_id = $1 FOR UPDATE', [executionId]))[0];
  }

  async find(workspaceId: string, workflowId: string, executionId: string): Promise<PausedRow | undefined> {
    return (await this.db.query<PausedRow>(
      'SELECT * FROM paused_executions WHERE execution_id = $1 AND workflow_id::text = $2 AND workspace_id = $3',
      [executionId, workflowId, workspaceId],
    ))[0];
  }

  async queueOf(pausedId: string): Promise<QueueRow[]> {
    return this.db.query<QueueRow>('SELECT * FROM resume_queue WHERE paused_execution_id = $1 ORDER BY queued_at, id', [pausedId]);
  }

  /** The paused-execution record exactly as the spec shapes it. */
  async record(row: PausedRow): Promise<Record<string, unknown>> {
    const queue = await this.queueOf(row.id);
    const entries = queue.map(publicEntry);
    const pending = queue.filter((e) => e.status === 'pending');
    const pausePoints = Object.values(row.pause_points).map((p) => {
      const mine = queue.filter((e) => e.context_id === p.contextId);
      const latest = mine[mine.length - 1];
      const position = pending.findIndex((e) => e.context_id === p.contextId);
      return {
        contextId: p.contextId,
        blockId: p.blockId,
        response: p.response,
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
      executionId: row.execution_id,
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
  ): Promise<{ entry: QueueRow; paused: PausedRow; queuePosition: number | null }> {
    return this.db.tx(async (q) => {
      const paused = (await q.query<PausedRow>(
        'SELECT * FROM paused_executions WHERE execution_id = $1 AND workflow_id::text = $2 AND workspace_id = $3 FOR UPDATE',
        [executionId, workflowId, workspaceId],
      ))[0];
      if (!paused) throw new HttpError(404, 'Paused execution not found or already resumed');
      if (paused.status !== 'paused' && paused.status !== 'partially_resumed') throw new HttpError(409, 'Paused execution is not resumable');
      const point = paused.pause_points[contextId];
      if (!point) throw new HttpError(404, 'Pause point not found for execution');
      if (point.resumeStatus !== 'paused') throw new HttpError(409, 'Pause point already resumed or in progress');
      const fields = ((point.response as { fields?: FormField[] } | null)?.fields ?? []) as FormField[];
      const input = validateSubmission(fields, rawInput);
      const busy = await q.query<{ n: number }>(
        "SELECT count(*)::int AS n FROM resume_queue WHERE paused_execution_id = $1 AND status IN ('claimed', 'pending')",
        [paused.id],
      );
      const claimed = busy[0].n === 0;
      const entry = (await q.query<QueueRow>(
        `INSERT INTO resume_queue (id, paused_execution_id, parent_execution_id, new_execution_id, context_id, resume_input, status, claimed_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, CASE WHEN $7 = 'claimed' THEN clock_timestamp() END) RETURNING *`,
        [newId(), paused.id, executionId, newId(), contextId, JSON.stringify(input), claimed ? 'claimed' : 'pending'],
      ))[0];
      const map = { ...paused.pause_points, [contextId]: { ...point, resumeStatus: (claimed ? 'resuming' : 'queued') as ResumeStatus } };
      await q.query(
        `UPDATE paused_executions SET pause_points = $2, next_timeout_at = $3, updated_at = date_trunc('milliseconds', clock_timestamp()) WHERE id = $1`,
        [paused.id, JSON.stringify(map), nextTimeout(map)],
      );
      return { entry, paused, queuePosition: claimed ? null : busy[0].n };
    });
  }

  /** Creates the durable async job that runs a claimed resume entry and enqueues it. */
  async enqueueEntryJob(paused: PausedRow, entry: QueueRow): Promise<string> {
    await this.db.query(
      `INSERT INTO executions (id, workspace_id, workflow_id, version_id, mode, trigger, status, billed_account, input, resume_entry_id)
       VALUES ($1, $2, $3, $4, 'async', 'resume', 'queued', $5, '{}'::jsonb, $6)`,
      [entry.new_execution_id, paused.workspace_id, paused.workflow_id, paused.version_id, paused.billed_account, entry.id],
    );
    await this.queue.enqueue(entry.new_execution_id);
    return entry.new_execution_id;
  }

  /**
   * Runs a claimed resume: replays every completed step, records the submission as the human
   * block's output, and continues. Updates the pause record and the original execution, then
   * starts the next queued resume of the same execution.
   */
  async runEntry(
    entryId: string,
    opts: { signal: AbortSignal; recorded?: Map<string, StepRecord>; onStep?: (s: StepRecord) => Promise<void> },
  ): Promise<{ result: RunResult; output: unknown }> {
    const entry = (await this.db.query<QueueRow>('SELECT * FROM resume_queue WHERE id = $1', [entryId]))[0];
    if (!entry) throw new Error(`Resume entry ${entryId} not found`);
    const paused = (await this.db.query<PausedRow>('SELECT * FROM paused_executions WHERE id = $1', [entry.paused_execution_id]))[0];
    const version = paused ? await loadVersion(this.db, paused.version_id) : undefined;
    if (!paused || !version) throw new Error('The paused execution or its workflow version no longer exists');
    const point = paused.pause_points[entry.context_id];
    const recorded = new Map<string, StepRecord>(Object.entries(paused.steps));
    for (const [k, v] of opts.recorded ?? []) recorded.set(k, v);
    recorded.set(point.key, { key: point.key, blockId: point.blockId, output: entry.resume_input });
    const steps: StepRecord[] = [{ key: point.key, blockId: point.blockId, output: entry.resume_input }];
    const plan = await this.executions.workspacePlan(paused.workspace_id);
    const run: RunContext = { workspaceId: paused.workspace_id, billedAccount: paused.billed_account, plan };
    const result = await runWorkflow(compileVersion(version), {
      input: paused.input,
      ports: this.executions.portsFor(run),
      signal: opts.signal,
      timeoutMs: this.executions.limits.plan(plan).asyncTimeoutSeconds * 1000,
      recorded,
      onStep: async (s) => {
        steps.push(s);
        await opts.onStep?.(s);
      },
    });
    // Shutting down: the job row stays unfinished and resumes after the restart.
    if (opts.signal.aborted && result.status === 'cancelled') return { result, output: null };
    return { result, output: await this.finishEntry(paused, entry, result, steps) };
  }

  private async finishEntry(paused: PausedRow, entry: QueueRow, result: RunResult, steps: StepRecord[]): Promise<unknown> {
    const baseUrl = typeof paused.metadata.baseUrl === 'string' ? paused.metadata.baseUrl : this.executions.baseUrl();
    let output: unknown = result.response ?? result.output ?? null;
    if (result.status === 'paused') {
      output = await this.persistPause({
        executionId: paused.execution_id, workspaceId: paused.workspace_id, workflowId: paused.workflow_id, versionId: paused.version_id,
        mode: paused.mode, billedAccount: paused.billed_account, input: paused.input, baseUrl,
      }, result, steps);
    }
    const next = await this.db.tx(async (q) => {
      const row = await this.lock(q, paused.execution_id);
      if (!row) return undefined;
      const map = { ...row.pause_points };
      const point = map[entry.context_id];
      map[entry.context_id] = { ...point, resumeStatus: result.status === 'failed' || result.status === 'timed_out' ? 'failed' : 'resumed' };
      const resumed = Object.values(map).filter((p) => p.resumeStatus === 'resumed').length;
      const stepMap = Object.fromEntries(steps.map((s) => [s.key, s]));
      await q.query(
        `UPDATE paused_executions SET steps = steps || $2::jsonb, pause_points = $3, resumed_count = $4, status = $5,
                next_timeout_at = $6, updated_at = date_trunc('milliseconds', clock_timestamp()) WHERE id = $1`,
        [row.id, JSON.stringify(stepMap), JSON.stringify(map), resumed, overallStatus(map, result.status), nextTimeout(map)],
      );
      const failed = result.status !== 'completed' && result.status !== 'paused';
      await q.query(
        `UPDATE resume_queue SET status = $2, completed_at = clock_timestamp(), failure_reason = $3 WHERE id = $1`,
        [entry.id, failed ? 'failed' : 'completed', failed ? (result.error?.message ?? result.status) : null],
      );
      // The original execution carries the latest state of the whole run.
      await q.query(
        `UPDATE executions SET status = $2, output = $3, error = $4, error_block = $5, level = $6,
                ended_at = clock_timestamp(), duration_ms = (EXTRACT(EPOCH FROM (clock_timestamp() - COALESCE(started_at, created_at))) * 1000)::int
          WHERE id = $1`,
        [paused.execution_id, result.status === 'completed' ? 'completed' : result.status === 'paused' ? 'paused' : 'failed',
          JSON.stringify(output), result.error?.message ?? null, result.error?.blockId ?? null, failed ? 'error' : 'info'],
      );
      // Hand the execution to the next queued resume, in order.
      const pending = (await q.query<QueueRow>(
        "SELECT * FROM resume_queue WHERE paused_execution_id = $1 AND status = 'pending' ORDER BY queued_at, id LIMIT 1 FOR UPDATE",
        [row.id],
      ))[0];
      if (!pending) return undefined;
      const claimed = (await q.query<QueueRow>("UPDATE resume_queue SET status = 'claimed', claimed_at = clock_timestamp() WHERE id = $1 RETURNING *", [pending.id]))[0];
      const pts = { ...map, [pending.context_id]: { ...map[pending.context_id], resumeStatus: 'resuming' as ResumeStatus } };
      await q.query('UPDATE paused_executions SET pause_points = $2 WHERE id = $1', [row.id, JSON.stringify(pts)]);
      return { row: { ...row, pause_points: pts }, entry: claimed };
    });
    if (next) await this.enqueueEntryJob(next.row, next.entry);
    return output;
  }

  /** Gives up on pauses whose timeout passed: approve with the form's defaults, or fail the run. */
  async fireTimeouts(): Promise<number> {
    const due = await this.db.query<{ execution_id: string }>(
      'SELECT execution_id FROM paused_executions WHERE next_timeout_at IS NOT NULL AND next_timeout_at <= clock_timestamp() LIMIT 100',
    );
    let fired = 0;
    for (const { execution_id } of due) {
      const row = (await this.db.query<PausedRow>('SELECT * FROM paused_executions WHERE execution_id = $1', [execution_id]))[0];
      if (!row) continue;
      const now = Date.now();
      for (const p of Object.values(row.pause_points)) {
        if (p.resumeStatus !== 'paused' || !p.timeoutAt || Date.parse(p.timeoutAt) > now) continue;
        fired++;
        if (p.onTimeout === 'approve') {
          const fields = ((p.response as { fields?: FormField[] } | null)?.fields ?? []) as FormField[];
          const defaults = Object.fromEntries(fields.filter((f) => f.default !== undefined).map((f) => [f.name, f.default]));
          try {
            const { entry, paused, queuePosition } = await this.enqueueResume(row.workspace_id, row.workflow_id, row.execution_id, p.contextId,
              { ...defaults, timedOut: true, ...Object.fromEntries(fields.filter((f) => f.required && defaults[f.name] === undefined).map((f) => [f.name, f.type === 'boolean' ? true : f.type === 'number' ? 0 : 'approved'])) });
            if (queuePosition === null) await this.enqueueEntryJob(paused, entry);
          } catch (err) {
            if (!(err instanceof HttpError)) throw err; // someone resumed it meanwhile
          }
        } else {
          await this.failOnTimeout(row.execution_id, p.contextId);
        }
      }
    }
    return fired;
  }

  private async failOnTimeout(executionId: string, contextId: string): Promise<void> {
    await this.db.tx(async (q) => {
      const row = await this.lock(q, executionId);
      const point = row?.pause_points[contextId];
      if (!row || !point || point.resumeStatus !== 'paused') return;
      const map = { ...row.pause_points, [contextId]: { ...point, resumeStatus: 'failed' as ResumeStatus } };
      await q.query(
        `UPDATE paused_executions SET pause_points = $2, status = 'failed', next_timeout_at = NULL,
                updated_at = date_trunc('milliseconds', clock_timestamp()) WHERE id = $1`,
        [row.id, JSON.stringify(map)],
      );
      await q.query(
        `UPDATE executions SET status = 'failed', level = 'error', error = $2, error_block = $3, ended_at = clock_timestamp() WHERE id = $1`,
        [executionId, `Block "${point.blockId}" timed out waiting for a human response`, point.blockId],
      );
    });
  }

  start(intervalMs = 1000): void {
    const tick = () => {
      this.fireTimeouts().catch((err: unknown) => this.ctx.log.warn({ err }, 'pause timeout sweep failed'));
    };
    tick();
    this.timer = setInterval(tick, intervalMs);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
  }
}

function publicEntry(e: QueueRow) {
  return {
    id: e.id,
    pausedExecutionId: e.paused_execution_id,
    parentExecutionId: e.parent_execution_id,
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

