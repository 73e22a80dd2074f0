// The pause timeout sweep: points whose timeout passed are approved with their form's defaults (admitted like
// any async run of the paused run's account) or fail their run. Run by PauseService every second, never two
// passes at once.
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

/**
 * One pass over the due timeouts; returns how many points it approved or failed. Each paused execution is
 * read once, locked: its due points that fail are failed together in one write (the run fails once), and only
 * a run that did not fail has its due approvals resumed (docs/architecture.md, Pause lifecycle). Rewriting the
 * whole point map once per point, from a stale copy, made a run of 1,000 points take the sweep 125 s.
 */
export async function fireTimeouts(host: TimeoutHost): Promise<number> {
  let fired = 0;
  // Accounts refused admission in this pass: their other due approvals wait for a later pass too.
  const refused = new Set<string>();
  for (const executionId of await ps.dueTimeouts(host.db)) {
    const swept = await failDueTimeouts(host.db, executionId);
    fired += swept.failed;
    if (!swept.approvals || refused.has(swept.approvals.row.billed_account)) continue;
    const { row, points } = swept.approvals;
    for (const p of points) {
      if (!(await approveOnTimeout(host, row, p))) {
        refused.add(row.billed_account);
        break;
      }
      fired++;
    }
  }
  return fired;
}

/** A paused execution's record status while a person (or a timeout) may still resume it. */
const resumable = (status: string) => status === 'paused' || status === 'partially_resumed';

/**
 * In one transaction with the record locked: fails every due point whose timeout fails (one update of the
 * map, one of the run), or else hands back the due points whose timeout approves. A record no timeout can act
 * on any more (failed, cancelled, fully resumed) leaves the sweep for good.
 */
async function failDueTimeouts(db: Database, executionId: string): Promise<{ failed: number; approvals?: { row: PausedRow; points: StoredPoint[] } }> {
  return db.tx(async (q) => {
    const row = await ps.lockPaused(q, executionId);
    if (!row) return { failed: 0 };
    if (!resumable(row.status)) {
      await ps.clearNextTimeout(q, row.id);
      return { failed: 0 };
    }
    const now = Date.now();
    const due = Object.values(row.pause_points)
      .filter((p) => p.resumeStatus === 'paused' && p.timeoutAt !== undefined && Date.parse(p.timeoutAt) <= now)
      .sort((a, b) => Date.parse(a.timeoutAt as string) - Date.parse(b.timeoutAt as string));
    const failing = due.filter((p) => p.onTimeout !== 'approve');
    const first = failing[0];
    if (!first) return { failed: 0, approvals: { row, points: due } };
    const map: PointMap = { ...row.pause_points };
    for (const p of failing) map[p.contextId] = { ...p, resumeStatus: 'failed' };
    await ps.updatePaused(q, row.id, { points: map, nextTimeoutAt: null, status: 'failed' });
    // The first point to time out names the block the run failed at.
    await store.updateRunState(q, executionId, {
      status: 'failed', output: null, error: `Block "${first.blockId}" timed out waiting for a human response`, errorBlock: first.blockId,
    });
    return { failed: failing.length };
  });
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
