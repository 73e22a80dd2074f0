// SQL of the schedules area: the schedule of each workflow (schedules) and the claim of each fired tick
// (schedule_ticks). Times come from the scheduler's clock as parameters, never from the database's.
import type { Queryable } from '../db/database.js';
import type { ScheduleConfig } from '../engine/index.js';

export interface ScheduleRow {
  workflow_id: string;
  workspace_id: string;
  version_id: string | null;
  block_id: string;
  config: ScheduleConfig;
  cursor_at: Date;
  enabled: boolean;
  disabled_reason: string | null;
  disabled_at: Date | null;
  consecutive_failures: number;
}

export interface TickRow {
  workflow_id: string;
  tick_at: Date;
  workspace_id: string;
  version_id: string;
  missed_ticks: number;
  status: 'claimed' | 'enqueued' | 'refused';
  lease_until: Date | null;
  execution_id: string | null;
  outcome: string | null;
  error: string | null;
}

const cols = 'workflow_id, workspace_id, version_id, block_id, config, cursor_at, enabled, disabled_reason, disabled_at, consecutive_failures';

/**
 * Deploy: the workflow's schedule follows the new version, starts from `now` (ticks while it was not
 * deployed never fire) and is enabled again with its failure count reset.
 */
export async function saveDeployed(q: Queryable, s: { workflowId: string; workspaceId: string; versionId: string; blockId: string; config: ScheduleConfig; now: Date }): Promise<ScheduleRow> {
  const rows = await q.query<ScheduleRow>(
    `INSERT INTO schedules (workflow_id, workspace_id, version_id, block_id, config, cursor_at)
     VALUES ($1, $2, $3, $4, $5, $6)
     ON CONFLICT (workflow_id) DO UPDATE SET version_id = EXCLUDED.version_id, block_id = EXCLUDED.block_id,
       config = EXCLUDED.config, cursor_at = EXCLUDED.cursor_at, enabled = true, disabled_reason = NULL,
       disabled_at = NULL, consecutive_failures = 0, updated_at = now()
     RETURNING ${cols}`,
    [s.workflowId, s.workspaceId, s.versionId, s.blockId, JSON.stringify(s.config), s.now],
  );
  return rows[0];
}

/** Undeploy, or a version without a schedule block: nothing fires any more. */
export async function deactivate(q: Queryable, workflowId: string): Promise<void> {
  await q.query('UPDATE schedules SET version_id = NULL, updated_at = now() WHERE workflow_id = $1 AND version_id IS NOT NULL', [workflowId]);
}

/** Deployed schedules (enabled or not) among some workflows, for the API. */
export const deployedFor = (q: Queryable, workflowIds: readonly string[]) =>
  q.query<ScheduleRow>(`SELECT ${cols} FROM schedules WHERE workflow_id = ANY($1::uuid[]) AND version_id IS NOT NULL`, [workflowIds]);

/** Every schedule that may fire. */
export const active = (q: Queryable) =>
  q.query<ScheduleRow>(`SELECT ${cols} FROM schedules WHERE version_id IS NOT NULL AND enabled ORDER BY workflow_id`);

/**
 * Moves the cursor from what this process last read up to `cursor`. Only one process moves it past a
 * given range (the row lock orders them; a later one finds it moved and does nothing), and only while
 * the same version is deployed and enabled: an undeploy committed first wins at once.
 */
export async function advanceCursor(q: Queryable, workflowId: string, versionId: string, from: Date, cursor: Date): Promise<boolean> {
  const rows = await q.query(
    `UPDATE schedules SET cursor_at = $4 WHERE workflow_id = $1 AND version_id = $2 AND enabled AND cursor_at = $3 AND cursor_at < $4 RETURNING workflow_id`,
    [workflowId, versionId, from, cursor],
  );
  return rows.length > 0;
}

/** The claim of one tick: false when it exists (another process fired it). */
export async function claimTick(q: Queryable, t: { workflowId: string; tickAt: Date; workspaceId: string; versionId: string; missedTicks: number; leaseUntil: Date }): Promise<boolean> {
  const rows = await q.query(
    `INSERT INTO schedule_ticks (workflow_id, tick_at, workspace_id, version_id, missed_ticks, status, lease_until)
     VALUES ($1, $2, $3, $4, $5, 'claimed', $6) ON CONFLICT (workflow_id, tick_at) DO NOTHING RETURNING workflow_id`,
    [t.workflowId, t.tickAt, t.workspaceId, t.versionId, t.missedTicks, t.leaseUntil],
  );
  return rows.length > 0;
}

/** Claims whose process died before the run was queued (their lease lapsed): taken over, one process each. */
export const takeLapsedClaims = (q: Queryable, now: Date, leaseUntil: Date) =>
  q.query<TickRow>(
    `UPDATE schedule_ticks SET lease_until = $2 WHERE (workflow_id, tick_at) IN (
       SELECT workflow_id, tick_at FROM schedule_ticks WHERE status = 'claimed' AND lease_until < $1 LIMIT 100 FOR UPDATE SKIP LOCKED)
     RETURNING *`,
    [now, leaseUntil],
  );

export async function markEnqueued(q: Queryable, workflowId: string, tickAt: Date, executionId: string): Promise<void> {
  await q.query(`UPDATE schedule_ticks SET status = 'enqueued', execution_id = $3, lease_until = NULL WHERE workflow_id = $1 AND tick_at = $2`, [workflowId, tickAt, executionId]);
}

export async function markRefused(q: Queryable, workflowId: string, tickAt: Date, error: string): Promise<void> {
  await q.query(`UPDATE schedule_ticks SET status = 'refused', error = $3, lease_until = NULL WHERE workflow_id = $1 AND tick_at = $2`, [workflowId, tickAt, error]);
}

/** Enqueued runs whose outcome is not counted yet (checked against the runs they started). */
export const uncounted = (q: Queryable, limit: number) =>
  q.query<TickRow>(`SELECT * FROM schedule_ticks WHERE status = 'enqueued' AND outcome IS NULL ORDER BY tick_at LIMIT $1`, [limit]);

/**
 * Counts a finished run once: a success resets the schedule's failure count, a failure adds one and
 * disables the schedule at its limit (a cancelled run changes neither). Runs of an earlier deployment
 * are recorded but not counted. Returns the schedule after the change (undefined when nothing counted).
 */
export async function countOutcome(
  q: Queryable,
  o: { workflowId: string; executionId: string; outcome: string; effect: 'success' | 'failure' | 'none'; error: string | null; now: Date },
): Promise<ScheduleRow | undefined> {
  const ticks = await q.query<TickRow>(
    'UPDATE schedule_ticks SET outcome = $3, error = $4 WHERE workflow_id = $1 AND execution_id = $2 AND outcome IS NULL RETURNING *',
    [o.workflowId, o.executionId, o.outcome, o.error],
  );
  const tick = ticks[0];
  if (!tick || o.effect === 'none') return undefined;
  const atLimit = `enabled AND consecutive_failures + 1 >= COALESCE((config->>'maxConsecutiveFailures')::int, 10)`;
  const rows = o.effect === 'failure'
    ? await q.query<ScheduleRow>(
      `UPDATE schedules SET consecutive_failures = consecutive_failures + 1,
         enabled = CASE WHEN ${atLimit} THEN false ELSE enabled END,
         disabled_at = CASE WHEN ${atLimit} THEN $3::timestamptz ELSE disabled_at END,
         disabled_reason = CASE WHEN ${atLimit}
           THEN 'Disabled after ' || (consecutive_failures + 1) || ' consecutive failed runs (maxConsecutiveFailures); the last one failed: '
             || COALESCE($4::text, 'unknown error') || '. Redeploy the workflow to enable it again.'
           ELSE disabled_reason END,
         updated_at = now()
       WHERE workflow_id = $1 AND version_id = $2 RETURNING ${cols}`,
      [o.workflowId, tick.version_id, o.now, o.error])
    : await q.query<ScheduleRow>(
      `UPDATE schedules SET consecutive_failures = 0, updated_at = now() WHERE workflow_id = $1 AND version_id = $2 AND consecutive_failures > 0 RETURNING ${cols}`,
      [o.workflowId, tick.version_id]);
  return rows[0];
}

/** Settled claims (queued runs counted, refused ticks) of ticks before `before`. */
export async function purgeSettled(q: Queryable, before: Date): Promise<void> {
  await q.query(`DELETE FROM schedule_ticks WHERE tick_at < $1 AND (status = 'refused' OR (status = 'enqueued' AND outcome IS NOT NULL))`, [before]);
}
