// Shapes of Sim's v2 run API (reference/sim-v2-api.md section 2): the execute and resume answer of a
// finished run, the run resource, and the items of the runs list. Pure functions of stored rows and
// run results; the routes in v2-routes.ts only parse, authorize and send.
import type { RunResult } from '../engine/index.js';
import { inputError } from './execute-response.js';
import { publicExecutionId } from './execution-ids.js';
import { traceOutputs, valueAt, type OutputSelector } from './output-selection.js';
import type { PausedRow, QueueRow } from './pause-store.js';
import type { RunListRow } from './history-store.js';
import type { ExecutionRow } from './store.js';

export type RunStatus = 'queued' | 'pending' | 'running' | 'paused' | 'completed' | 'failed' | 'cancelled';

/** Status of a run resource: a queued job is `queued`, a running one `running`. */
export const resourceStatus = (s: ExecutionRow['status']): RunStatus => (s === 'processing' ? 'running' : s);

/** Status of a runs-list item (the persisted names): a queued job is `pending`. */
export const listStatus = (s: ExecutionRow['status']): RunStatus => (s === 'queued' ? 'pending' : s === 'processing' ? 'running' : s);

/** Stored statuses a list filter names. */
export const storedStatuses: Record<string, ExecutionRow['status']> = {
  pending: 'queued', running: 'processing', completed: 'completed', failed: 'failed', cancelled: 'cancelled', paused: 'paused',
};

const iso = (d: Date | null | undefined) => (d ? d.toISOString() : null);

export interface RunError { message: string; code: string; blockId?: string; blockName?: string; blockType?: string }

/** The error of a finished run as execute answers it: a code from Sim's closed set, and the failing block. */
export function executeError(result: RunResult): RunError | null {
  if (result.status === 'completed' || result.status === 'paused') return null;
  if (result.status === 'timed_out') return { message: result.error?.message ?? 'Execution timed out', code: 'TIMEOUT' };
  if (result.status === 'cancelled') return { message: result.error?.message ?? 'Run cancelled', code: 'CANCELLED' };
  const e = result.error;
  const block = e?.blockId !== undefined ? result.trace.find((t) => t.blockId === e.blockId) : undefined;
  const code = inputError(result) ? 'INVALID_INPUT'
    : block?.type === 'workflow' ? 'CHILD_WORKFLOW_FAILED'
    : e?.blockId !== undefined ? 'BLOCK_EXECUTION_FAILED' : 'EXECUTION_FAILED';
  return {
    message: e?.message ?? 'Execution failed',
    code,
    ...(e?.blockId !== undefined ? { blockId: e.blockId } : {}),
    ...(e?.blockName !== undefined ? { blockName: e.blockName } : {}),
    ...(block ? { blockType: block.type } : {}),
  };
}

/** The v2 status of a finished run: a timeout is a failure (with error code TIMEOUT). */
export const finishedStatus = (r: RunResult['status']) => (r === 'timed_out' ? 'failed' : r);

/**
 * The answer of a run that finished in the request (execute sync, resume of a sync run). A Response
 * block's status, headers and data stay inside `output`: v2 never lets a workflow set the HTTP answer.
 */
export function finishedRunData(workflowId: string, runId: string, result: RunResult, output: unknown, blockFields = true) {
  const error = executeError(result);
  return {
    runId,
    workflowId,
    status: finishedStatus(result.status),
    output: output ?? null,
    error: error && !blockFields ? { message: error.message, code: error.code } : error,
    startedAt: result.startedAt,
    endedAt: result.endedAt,
    durationMs: result.durationMs,
  };
}

/** The error of a stored run, rebuilt from its message: no block fields; a timeout keeps its code. */
function storedError(row: Pick<ExecutionRow, 'status' | 'error'>): RunError | null {
  if (row.status !== 'failed') return null;
  const message = row.error ?? 'Execution failed';
  return { message, code: /timed out/i.test(message) ? 'TIMEOUT' : 'EXECUTION_FAILED' };
}

/** `paused` of the run resource: the first pause point still waiting is the one to resume. */
function pausedView(p: PausedRow) {
  const waiting = Object.values(p.pause_points).filter((pt) => pt.resumeStatus === 'paused')
    .sort((a, b) => (a.registeredAt < b.registeredAt ? -1 : a.registeredAt > b.registeredAt ? 1 : 0));
  const first = waiting[0];
  return {
    contextId: first?.contextId ?? null,
    pausedAt: p.paused_at.toISOString(),
    resumeAt: first?.timeoutAt && first.onTimeout === 'approve' ? first.timeoutAt : null,
    pauseKind: 'human' as const,
    blockedOnBlockId: first?.blockId ?? null,
    automaticResumeWaitingReason: null,
    pausePointCount: p.total_pause_count,
    resumedCount: p.resumed_count,
  };
}

/** `cost` of v2: the run's total cost (base charge and model usage), USD; null while nothing is recorded. */
const costOf = (total: number | undefined) => (total === undefined ? null : { total });

export interface ResourceOptions {
  includeOutput: boolean;
  /** `blockOutputs` selectors (block ids, no names); undefined when none were asked for. */
  selectors?: OutputSelector[];
}

/** The run resource (`GET /api/v2/workflows/{id}/runs/{runId}`): its twelve fields. */
export function runResource(row: ExecutionRow, paused: PausedRow | undefined, charge: number | undefined, opts: ResourceOptions) {
  const status = paused && (paused.status === 'paused' || paused.status === 'partially_resumed') ? 'paused' : resourceStatus(row.status);
  let blockOutputs: Record<string, unknown> | null = null;
  if (opts.selectors) {
    const outputs = traceOutputs(row.trace);
    blockOutputs = {};
    for (const s of opts.selectors) {
      if (!outputs.has(s.blockId)) continue;
      const v = valueAt(outputs.get(s.blockId), s.path);
      if (v.found) blockOutputs[s.key] = v.value ?? null;
    }
  }
  return {
    runId: publicExecutionId(row.id),
    workflowId: row.workflow_id,
    status,
    trigger: row.trigger,
    startedAt: (row.started_at ?? row.created_at).toISOString(),
    endedAt: status === 'queued' || status === 'running' || status === 'paused' ? null : iso(row.ended_at),
    durationMs: status === 'queued' || status === 'running' || status === 'paused' ? null : row.duration_ms,
    paused: status === 'paused' && paused ? pausedView(paused) : null,
    cost: costOf(charge),
    error: storedError(row),
    output: opts.includeOutput && row.status === 'completed' ? (row.output ?? null) : null,
    blockOutputs,
  };
}

/** A resume admitted behind another one of the same run: a run that has not started yet. */
export function queuedResumeResource(entry: QueueRow, workflowId: string) {
  const cancelled = entry.status === 'failed';
  return {
    runId: entry.new_execution_id, workflowId, status: cancelled ? 'cancelled' as const : 'queued' as const, trigger: 'resume',
    startedAt: entry.queued_at.toISOString(), endedAt: iso(entry.completed_at), durationMs: null, paused: null, cost: null,
    error: null, output: null, blockOutputs: null,
  };
}

/** An item of the runs list. */
export function runListItem(row: RunListRow, charge: number | undefined) {
  const status = listStatus(row.status);
  // As the run resource: no end before the run is terminal (a pause records when it paused).
  const open = status === 'pending' || status === 'running' || status === 'paused';
  return {
    runId: publicExecutionId(row.id),
    workflowId: row.workflow_id,
    status,
    trigger: row.trigger,
    startedAt: row.started.toISOString(),
    endedAt: open ? null : iso(row.ended_at),
    durationMs: open ? null : row.duration_ms,
    cost: costOf(charge),
  };
}
