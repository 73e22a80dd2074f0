// SQL of paused executions and their resume queue: the pause store of the runs area.
import type { Queryable } from '../db/database.js';
import type { PausePoint, StepRecord } from '../engine/index.js';
import { newId, newTimeOrderedId } from '../ids.js';

export type ResumeStatus = 'paused' | 'queued' | 'resuming' | 'resumed' | 'failed';

export interface ResumeLinks { apiUrl: string; uiUrl: string; contextId: string; executionId: string; workflowId: string }

export interface StoredPoint {
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

export type PointMap = Record<string, StoredPoint>;

export interface PausedRow {
  id: string; workspace_id: string; workflow_id: string; execution_id: string; version_id: string; mode: 'sync' | 'async';
  billed_account: string; status: string; input: Record<string, unknown>; steps: Record<string, StepRecord>;
  pause_points: PointMap; total_pause_count: number; resumed_count: number;
  metadata: Record<string, unknown>; trigger_ids: string[]; paused_at: Date; updated_at: Date; expires_at: Date | null;
}

export interface QueueRow {
  id: string; paused_execution_id: string; parent_execution_id: string; new_execution_id: string; context_id: string;
  resume_input: unknown; status: 'pending' | 'claimed' | 'completed' | 'failed'; queued_at: Date; claimed_at: Date | null;
  completed_at: Date | null; failure_reason: string | null;
  /** While claimed and not yet handed to an async job: until when its holder (a request running it) is known alive. */
  lease_until: Date | null;
  /** The concurrency slot of the admission of a resume queued behind another (its job frees it). */
  slot_token: string | null;
}

const stamp = "date_trunc('milliseconds', clock_timestamp())";

export async function insertPaused(
  q: Queryable,
  p: { workspaceId: string; workflowId: string; executionId: string; versionId: string; mode: 'sync' | 'async'; billedAccount: string;
    input: Record<string, unknown>; steps: Record<string, StepRecord>; points: PointMap; metadata: Record<string, unknown>; nextTimeoutAt: string | null },
): Promise<void> {
  await q.query(
    `INSERT INTO paused_executions (id, workspace_id, workflow_id, execution_id, version_id, mode, billed_account, status,
       input, steps, pause_points, total_pause_count, metadata, next_timeout_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, 'paused', $8, $9, $10, $11, $12, $13)`,
    [newId(), p.workspaceId, p.workflowId, p.executionId, p.versionId, p.mode, p.billedAccount, JSON.stringify(p.input),
      JSON.stringify(p.steps), JSON.stringify(p.points), Object.keys(p.points).length, JSON.stringify(p.metadata), p.nextTimeoutAt],
  );
}

/** Whether the paused run answered its caller as a stream: a resume through the legacy API streams too (sim-api 5.4). */
export const wasStreamed = (p: PausedRow): boolean => p.metadata?.streamed === true;

/** Locks a paused execution for the rest of the transaction. */
export const lockPaused = (q: Queryable, executionId: string) =>
  q.query<PausedRow>('SELECT * FROM paused_executions WHERE execution_id = $1 FOR UPDATE', [executionId]).then((r) => r[0]);

/** A paused execution as its caller may see it (any of its stored ids): its workspace and workflow must match. */
export const findPaused = (q: Queryable, workspaceId: string, workflowId: string, executionIds: string[], lock = false) =>
  q.query<PausedRow>(
    `SELECT * FROM paused_executions WHERE execution_id = ANY($1::text[]) AND workflow_id::text = $2 AND workspace_id = $3${lock ? ' FOR UPDATE' : ''}`,
    [executionIds, workflowId, workspaceId],
  ).then((r) => r[0]);

export const findPausedById = (q: Queryable, id: string) =>
  q.query<PausedRow>('SELECT * FROM paused_executions WHERE id = $1', [id]).then((r) => r[0]);

export const findPausedByExecution = (q: Queryable, executionId: string) =>
  q.query<PausedRow>('SELECT * FROM paused_executions WHERE execution_id = $1', [executionId]).then((r) => r[0]);

/** Writes the pause points (and optionally merges new steps, counts and status) of a paused execution. */
export async function updatePaused(
  q: Queryable,
  id: string,
  u: { points: PointMap; nextTimeoutAt: string | null; steps?: Record<string, StepRecord>; addedPauses?: number; resumedCount?: number; status?: string },
): Promise<void> {
  await q.query(
    `UPDATE paused_executions SET pause_points = $2, next_timeout_at = $3,
            steps = CASE WHEN $4::jsonb IS NULL THEN steps ELSE steps || $4::jsonb END,
            total_pause_count = total_pause_count + $5,
            resumed_count = COALESCE($6, resumed_count),
            status = COALESCE($7, status),
            updated_at = ${stamp}
      WHERE id = $1`,
    [id, JSON.stringify(u.points), u.nextTimeoutAt, u.steps ? JSON.stringify(u.steps) : null, u.addedPauses ?? 0, u.resumedCount ?? null, u.status ?? null],
  );
}

export const queueOf = (q: Queryable, pausedId: string) =>
  q.query<QueueRow>('SELECT * FROM resume_queue WHERE paused_execution_id = $1 ORDER BY queued_at, id', [pausedId]);

export const activeResumeCount = (q: Queryable, pausedId: string) =>
  q.query<{ n: number }>("SELECT count(*)::int AS n FROM resume_queue WHERE paused_execution_id = $1 AND status IN ('claimed', 'pending')", [pausedId])
    .then((r) => r[0]?.n ?? 0);

const leaseFromNow = (param: string) => `clock_timestamp() + (${param}::int * interval '1 millisecond')`;

/** A resume entry, claimed (with a lease of `leaseMs`) or pending behind a running resume. */
export const insertResumeEntry = (
  q: Queryable,
  e: { pausedId: string; parentExecutionId: string; contextId: string; input: unknown; claimed: boolean; leaseMs: number; slotToken?: string | null },
) =>
  q.query<QueueRow>(
    `INSERT INTO resume_queue (id, paused_execution_id, parent_execution_id, new_execution_id, context_id, resume_input, status, claimed_at, lease_until, slot_token)
     VALUES ($1, $2, $3, $4, $5, $6, $7, CASE WHEN $7 = 'claimed' THEN clock_timestamp() END, CASE WHEN $7 = 'claimed' THEN ${leaseFromNow('$8')} END, $9)
     RETURNING *`,
    [newId(), e.pausedId, e.parentExecutionId, newTimeOrderedId(), e.contextId, JSON.stringify(e.input), e.claimed ? 'claimed' : 'pending', e.leaseMs, e.slotToken ?? null],
  ).then((r) => r[0] as QueueRow);

/** A claim still held: claimed, and its lease (if it has its own) not lapsed. A lapsed one is no one's until released. */
const HELD = "status = 'claimed' AND (lease_until IS NULL OR lease_until >= clock_timestamp())";

/** Extends the lease of a claimed resume; false when it is held no more (lapsed, or released). */
export const renewResumeClaim = (q: Queryable, id: string, leaseMs: number) =>
  q.query(`UPDATE resume_queue SET lease_until = ${leaseFromNow('$2')} WHERE id = $1 AND ${HELD} RETURNING 1`, [id, leaseMs])
    .then((r) => r.length > 0);

/** The claimed resume's async job exists now: its job lease covers it from here on. False when it is held no more. */
export const endResumeLease = (q: Queryable, id: string) =>
  q.query(`UPDATE resume_queue SET lease_until = NULL WHERE id = $1 AND ${HELD} RETURNING 1`, [id]).then((r) => r.length > 0);

/** Claimed resumes whose lease lapsed (every leased one with `all`: embedded start-up, where none can be alive). */
/**
 * Claims whose lease lapsed; with `claimedBefore`, every claim taken before then instead, lapsed or not (at
 * embedded start-up: claims of the process before, not those the sweep itself hands on).
 */
export const lapsedResumeClaims = (q: Queryable, claimedBefore: Date | null, limit: number) =>
  q.query<{ id: string; parent_execution_id: string }>(
    `SELECT id, parent_execution_id FROM resume_queue
      WHERE status = 'claimed' AND lease_until IS NOT NULL
        AND (CASE WHEN $1::timestamptz IS NULL THEN lease_until < clock_timestamp() ELSE claimed_at < $1::timestamptz END)
      ORDER BY lease_until LIMIT $2`,
    [claimedBefore, limit],
  );

/**
 * Locks a resume entry for the rest of the transaction (after its paused execution: the order every writer
 * keeps) while its claim is held; with `lapsed`, only when its lease lapsed instead (`all`: any lease).
 */
export const lockClaimedResume = (q: Queryable, id: string, lapsed?: { all: boolean }) =>
  q.query<QueueRow>(
    `SELECT * FROM resume_queue WHERE id = $1 AND ${lapsed
      ? "status = 'claimed' AND lease_until IS NOT NULL AND ($2 OR lease_until < clock_timestamp())" : `${HELD} AND $2::boolean IS NULL`}
      FOR UPDATE`,
    [id, lapsed ? lapsed.all : null],
  ).then((r) => r[0]);

/** The earliest timeout among the points still waiting for a person (null: none). */
export function nextTimeout(points: PointMap): string | null {
  const due = Object.values(points).filter((p) => p.resumeStatus === 'paused' && p.timeoutAt).map((p) => p.timeoutAt as string).sort();
  return due[0] ?? null;
}

export const findResumeEntry = (q: Queryable, id: string) =>
  q.query<QueueRow>('SELECT * FROM resume_queue WHERE id = $1', [id]).then((r) => r[0]);

export async function completeResumeEntry(q: Queryable, id: string, failureReason: string | null): Promise<void> {
  await q.query(
    'UPDATE resume_queue SET status = $2, completed_at = clock_timestamp(), failure_reason = $3 WHERE id = $1',
    [id, failureReason === null ? 'completed' : 'failed', failureReason],
  );
}

/** Claims the oldest pending resume of a paused execution (with a lease of `leaseMs`), or undefined when none waits. */
export async function claimNextResume(q: Queryable, pausedId: string, leaseMs: number): Promise<QueueRow | undefined> {
  const pending = (await q.query<QueueRow>(
    "SELECT * FROM resume_queue WHERE paused_execution_id = $1 AND status = 'pending' ORDER BY queued_at, id LIMIT 1 FOR UPDATE",
    [pausedId],
  ))[0];
  if (!pending) return undefined;
  return (await q.query<QueueRow>(
    `UPDATE resume_queue SET status = 'claimed', claimed_at = clock_timestamp(), lease_until = ${leaseFromNow('$2')} WHERE id = $1 RETURNING *`,
    [pending.id, leaseMs],
  ))[0];
}

/** Paused executions with a pause whose timeout has passed. */
export const dueTimeouts = (q: Queryable) =>
  q.query<{ execution_id: string }>(
    'SELECT execution_id FROM paused_executions WHERE next_timeout_at IS NOT NULL AND next_timeout_at <= clock_timestamp() LIMIT 100',
  ).then((r) => r.map((x) => x.execution_id));

/** A paused execution no timeout can act on any more (failed, resumed, cancelled): the sweep stops looking at it. */
export async function clearNextTimeout(q: Queryable, pausedId: string): Promise<void> {
  await q.query('UPDATE paused_executions SET next_timeout_at = NULL WHERE id = $1', [pausedId]);
}

/**
 * Cancels a paused execution (locked by the caller): no resume is accepted any more, its timeouts
 * stop and queued resumes fail. Returns the execution ids of resumes already claimed (running).
 */
export async function cancelPausedExecution(q: Queryable, pausedId: string): Promise<{ started: string[]; freedSlots: string[] }> {
  await q.query(`UPDATE paused_executions SET status = 'cancelled', next_timeout_at = NULL, updated_at = ${stamp} WHERE id = $1`, [pausedId]);
  const failed = await q.query<{ slot_token: string | null }>(
    `UPDATE resume_queue SET status = 'failed', completed_at = clock_timestamp(), failure_reason = 'Run cancelled'
      WHERE paused_execution_id = $1 AND status = 'pending' RETURNING slot_token`,
    [pausedId],
  );
  const claimed = await q.query<{ new_execution_id: string }>(
    "SELECT new_execution_id FROM resume_queue WHERE paused_execution_id = $1 AND status = 'claimed'",
    [pausedId],
  );
  return { started: claimed.map((r) => r.new_execution_id), freedSlots: failed.flatMap((r) => (r.slot_token ? [r.slot_token] : [])) };
}

/** A resume of a workspace's workflow by the run id it was given, before its run exists (queued behind another). */
export const findResumeRun = (q: Queryable, workspaceId: string, workflowId: string, runId: string) =>
  q.query<QueueRow>(
    `SELECT r.* FROM resume_queue r JOIN paused_executions p ON p.id = r.paused_execution_id
      WHERE r.new_execution_id = $1 AND p.workspace_id = $2 AND p.workflow_id::text = $3`,
    [runId, workspaceId, workflowId],
  ).then((r) => r[0]);
