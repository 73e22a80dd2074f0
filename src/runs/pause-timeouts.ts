// The pause timeout sweep: points whose timeout passed are approved with their form's defaults (admitted like
// any async run of the paused run's account) or fail their run. Run by PauseService every second.
import type { Database } from '../db/database.js';
import { HttpError } from '../http/errors.js';
import * as ps from './pause-store.js';
import type { PausedRow, PointMap, QueueRow, StoredPoint } from './pause-store.js';
import { formFields } from './resume-input.js';
import * as store from './store.js';

/** What the sweep needs of PauseService. */
export interface TimeoutHost {
  db: Database;
  /** Admits a resume the service starts itself; throws the refusal (an HttpError). */
  admitResume(paused: PausedRow): Promise<{ slot: string | null; release(): Promise<void> }>;
  enqueueResume(workspaceId: string, workflowId: string, executionId: string, contextId: string, rawInput: unknown,
    slotToken?: string | null, marks?: Record<string, unknown>): Promise<{ entry: QueueRow; paused: PausedRow; queuePosition: number | null }>;
  enqueueEntryJob(paused: PausedRow, entry: QueueRow, slotToken?: string | null): Promise<string>;
}

/** One pass over the due timeouts; returns how many points it approved or failed. */
export async function fireTimeouts(host: TimeoutHost): Promise<number> {
  let fired = 0;
  // Accounts refused admission in this pass: their other due approvals wait for a later pass too.
  const refused = new Set<string>();
  for (const executionId of await ps.dueTimeouts(host.db)) {
    const row = await ps.findPausedByExecution(host.db, executionId);
    if (!row) continue;
    const now = Date.now();
    for (const p of Object.values(row.pause_points)) {
      if (p.resumeStatus !== 'paused' || !p.timeoutAt || Date.parse(p.timeoutAt) > now) continue;
      if (p.onTimeout !== 'approve') {
        fired++;
        await failOnTimeout(host.db, row.execution_id, p.contextId);
      } else if (!refused.has(row.billed_account)) {
        if (await approveOnTimeout(host, row, p)) fired++;
        else refused.add(row.billed_account);
      }
    }
  }
  return fired;
}

/**
 * Resumes a point whose timeout approves, admitted like any async run of its account: a workspace cannot run
 * more at once than its plan allows by letting pauses time out. Refused, the point stays paused and a later
 * pass tries again (false).
 */
async function approveOnTimeout(host: TimeoutHost, row: PausedRow, p: StoredPoint): Promise<boolean> {
  let admission: { slot: string | null; release(): Promise<void> };
  try {
    admission = await host.admitResume(row);
  } catch (err) {
    if (err instanceof HttpError) return false;
    throw err;
  }
  const fields = formFields(p);
  const defaults = Object.fromEntries(fields.filter((f) => f.default !== undefined).map((f) => [f.name, f.default]));
  const filled = Object.fromEntries(fields.filter((f) => f.required && defaults[f.name] === undefined)
    .map((f) => [f.name, f.type === 'boolean' ? true : f.type === 'number' ? 0 : 'approved']));
  let handedOver = false;
  try {
    const { entry, paused, queuePosition } = await host.enqueueResume(row.workspace_id, row.workflow_id, row.execution_id, p.contextId,
      { ...defaults, ...filled }, admission.slot, { timedOut: true });
    // Its job (or, queued, its entry and then its job) frees the slot when it ends.
    handedOver = true;
    if (queuePosition === null) await host.enqueueEntryJob(paused, entry, admission.slot);
  } catch (err) {
    if (!(err instanceof HttpError)) throw err; // someone resumed it meanwhile
  } finally {
    if (!handedOver) await admission.release();
  }
  return true;
}

async function failOnTimeout(db: Database, executionId: string, contextId: string): Promise<void> {
  await db.tx(async (q) => {
    const row = await ps.lockPaused(q, executionId);
    const point = row?.pause_points[contextId];
    if (!row || !point || point.resumeStatus !== 'paused') return;
    const map: PointMap = { ...row.pause_points, [contextId]: { ...point, resumeStatus: 'failed' } };
    await ps.updatePaused(q, row.id, { points: map, nextTimeoutAt: null, status: 'failed' });
    await store.updateRunState(q, executionId, {
      status: 'failed', output: null, error: `Block "${point.blockId}" timed out waiting for a human response`, errorBlock: point.blockId,
    });
  });
}
