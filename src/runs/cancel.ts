// Cancelling runs, in every state: a queued run never starts, a running one (sync or async, in this
// process or another) stops at once and ends `cancelled`, a paused one is cancelled with its pause.
import { setMaxListeners } from 'node:events';
import type { Database } from '../db/database.js';
import * as ps from './pause-store.js';
import { publicExecutionId } from './execution-ids.js';
import * as store from './store.js';
import type { ExecutionRow } from './store.js';

export type CancelReason = 'recorded' | 'already_cancelled' | 'already_completed' | 'already_failed';

export interface CancelOutcome {
  runId: string;
  /** True when the run is now cancelled or stopping (or was cancelled before). */
  success: boolean;
  reason: CancelReason;
  /** The cancellation is in the database: any process running the run, or taking it over, sees it. */
  durablyRecorded: boolean;
  /** The run was running in this process and was stopped at once. */
  locallyAborted: boolean;
  pausedCancelled: boolean;
}

/**
 * A run's own abort controller (the engine's `newController`). Its signal holds one listener per block running at
 * once and per child run until each ends, up to the tree's concurrency: not a leak, so Node's warning past 10
 * listeners is turned off for it (docs/architecture.md, "Cancel").
 */
export function newRunController(): AbortController {
  const controller = new AbortController();
  setMaxListeners(0, controller.signal);
  return controller;
}

/** Runs in progress in this process, by stored execution id: a cancel reaches them without waiting for a lease renewal. */
export class InFlightRuns {
  private readonly runs = new Map<string, AbortController>();

  /** Registers a run; its signal aborts when `parent` does or when the run is cancelled. */
  start(executionId: string, parent: AbortSignal): { signal: AbortSignal; end: () => void } {
    const own = new AbortController();
    // Linked by hand (not AbortSignal.any): the listener on a long-lived parent (the shutdown signal) is removed when the run ends.
    const follow = () => own.abort(parent.reason);
    if (parent.aborted) follow();
    else parent.addEventListener('abort', follow, { once: true });
    this.runs.set(executionId, own);
    return {
      signal: own.signal,
      end: () => {
        parent.removeEventListener('abort', follow);
        if (this.runs.get(executionId) === own) this.runs.delete(executionId);
      },
    };
  }

  /** Stops a run of this process; false when it does not run here. */
  abort(executionId: string): boolean {
    const c = this.runs.get(executionId);
    if (!c) return false;
    c.abort(new Error('Run cancelled'));
    return true;
  }
}

const terminal: Partial<Record<ExecutionRow['status'], CancelReason>> = {
  completed: 'already_completed', failed: 'already_failed', cancelled: 'already_cancelled',
};

export interface CancelDeps {
  db: Database;
  inFlight: InFlightRuns;
  /** Frees the concurrency slot a queued async run held since its admission. */
  releaseSlot(account: string, slot: string): Promise<void>;
}

/** Stops one run by its stored id: cancels it while queued, else records the cancel and aborts it here. */
async function stopRun(deps: CancelDeps, id: string): Promise<{ recorded: boolean; locallyAborted: boolean }> {
  const queued = await store.cancelQueued(deps.db, id);
  if (queued) {
    if (queued.slot_token) await deps.releaseSlot(queued.billed_account, queued.slot_token).catch(() => undefined);
    return { recorded: true, locallyAborted: false };
  }
  const recorded = await store.requestCancel(deps.db, id);
  return { recorded, locallyAborted: deps.inFlight.abort(id) };
}

/** Cancels a run (the caller found and authorized `row`). */
export async function cancelRun(deps: CancelDeps, row: ExecutionRow): Promise<CancelOutcome> {
  const runId = publicExecutionId(row.id);
  const done = terminal[row.status];
  if (done) return { runId, success: done === 'already_cancelled', reason: done, durablyRecorded: false, locallyAborted: false, pausedCancelled: false };
  if (row.status === 'paused') {
    const resumes = await cancelPaused(deps.db, row.id);
    if (resumes === null) {
      // Its pause ended meanwhile (resumed to the end, failed): answer for the state it is in now.
      const now = await store.findExecution(deps.db, row.id);
      if (now && now.status !== 'paused') return cancelRun(deps, now);
      await store.updateRunState(deps.db, row.id, { status: 'cancelled', output: row.output ?? null, error: 'Run cancelled', errorBlock: null });
      return { runId, success: true, reason: 'recorded', durablyRecorded: true, locallyAborted: false, pausedCancelled: false };
    }
    // Resumes of this run already admitted (queued or running) stop too; queued ones give back their slots.
    for (const slot of resumes.freedSlots) await deps.releaseSlot(row.billed_account, slot).catch(() => undefined);
    let locallyAborted = false;
    for (const id of resumes.started) locallyAborted = (await stopRun(deps, id)).locallyAborted || locallyAborted;
    return { runId, success: true, reason: 'recorded', durablyRecorded: true, locallyAborted, pausedCancelled: true };
  }
  const { recorded, locallyAborted } = await stopRun(deps, row.id);
  if (!recorded && !locallyAborted) {
    // It ended (or paused) between the read and the cancel: answer for the state it is in now.
    const now = await store.findExecution(deps.db, row.id);
    if (now && now.status !== row.status) return cancelRun(deps, now);
  }
  return { runId, success: recorded || locallyAborted, reason: 'recorded', durablyRecorded: recorded, locallyAborted, pausedCancelled: false };
}

/**
 * Cancels a paused run with its pause: no resume is accepted any more, queued resumes fail, pause
 * timeouts stop. Returns the execution ids of resumes already started (to stop them), or null when
 * the run was no longer paused.
 */
async function cancelPaused(db: Database, executionId: string): Promise<{ started: string[]; freedSlots: string[] } | null> {
  return db.tx(async (q) => {
    const paused = await ps.lockPaused(q, executionId);
    if (!paused || (paused.status !== 'paused' && paused.status !== 'partially_resumed')) return null;
    const resumes = await ps.cancelPausedExecution(q, paused.id);
    const row = await store.findExecution(q, executionId);
    await store.updateRunState(q, executionId, { status: 'cancelled', output: row?.output ?? null, error: 'Run cancelled', errorBlock: null });
    return resumes;
  });
}
