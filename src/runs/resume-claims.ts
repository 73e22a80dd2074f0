// Leases of claimed resumes. A resume runs in the request that claimed it (sync paused runs) or waits for
// its async job to be created; either way its claim holds a lease the holder renews. A claim whose lease
// lapsed belongs to a process that died: it is released, so the pause point can be resumed again and the
// resumes queued behind it go on, instead of the paused run staying blocked with every resume a 409.
import type { Logger } from 'pino';
import type { Database } from '../db/database.js';
import { renewedLease, type RenewedLease } from '../db/renewed-lease.js';
import * as ps from './pause-store.js';
import type { PausedRow, PointMap, QueueRow } from './pause-store.js';

export const INTERRUPTED_RESUME = 'Interrupted: the server stopped during the resume; the pause point can be resumed again';

/** Renews a claimed resume while its request runs it; the signal aborts (the run stops) once the claim is lost. */
export function holdResumeClaim(db: Database, log: Logger, entryId: string, leaseMs: number): RenewedLease {
  return renewedLease(() => ps.renewResumeClaim(db, entryId, leaseMs), {
    leaseMs,
    onLost: (why, err) => log.warn({ err, entryId }, `resume claim lost (${why}): the resumed run stops`),
    onRetry: (err) => log.warn({ err, entryId }, 'renewing a resume claim failed; retrying at the next renewal'),
  });
}

/**
 * Releases claims whose lease lapsed (every leased claim with `all`, at embedded start-up): the entry fails
 * as interrupted, its point waits for a person again, and the next queued resume of the same run is
 * claimed. Returns those next claims: the caller hands each to an async job.
 */
export async function releaseLapsedResumeClaims(db: Database, opts: { all: boolean; leaseMs: number }): Promise<{ paused: PausedRow; entry: QueueRow }[]> {
  const next: { paused: PausedRow; entry: QueueRow }[] = [];
  // `all` pages through every claim taken before this sweep (the claims it hands on are taken after); the
  // periodic sweep takes one page a tick.
  const claimedBefore = opts.all ? new Date() : null;
  // A claim left as it was (its paused run gone meanwhile) comes back in the next page: seen once is enough.
  const seen = new Set<string>();
  for (;;) {
    const page = await ps.lapsedResumeClaims(db, claimedBefore, RELEASE_PAGE);
    const fresh = page.filter((c) => !seen.has(c.id));
    for (const c of fresh) seen.add(c.id);
    next.push(...await releasePage(db, fresh, opts));
    if (!opts.all || page.length < RELEASE_PAGE || fresh.length === 0) return next;
  }
}

const RELEASE_PAGE = 100;

async function releasePage(
  db: Database, page: readonly { id: string; parent_execution_id: string }[], opts: { all: boolean; leaseMs: number },
): Promise<{ paused: PausedRow; entry: QueueRow }[]> {
  const next: { paused: PausedRow; entry: QueueRow }[] = [];
  for (const lapsed of page) {
    const handed = await db.tx(async (q) => {
      const row = await ps.lockPaused(q, lapsed.parent_execution_id);
      const entry = row ? await ps.lockClaimedResume(q, lapsed.id, { all: opts.all }) : undefined;
      if (!row || !entry) return undefined; // renewed, finished or released meanwhile
      await ps.completeResumeEntry(q, entry.id, INTERRUPTED_RESUME);
      if (row.status === 'cancelled') return undefined;
      const point = row.pause_points[entry.context_id];
      let map: PointMap = point ? { ...row.pause_points, [entry.context_id]: { ...point, resumeStatus: 'paused' } } : row.pause_points;
      const claimed = await ps.claimNextResume(q, row.id, opts.leaseMs);
      const nextPoint = claimed ? map[claimed.context_id] : undefined;
      if (claimed && nextPoint) map = { ...map, [claimed.context_id]: { ...nextPoint, resumeStatus: 'resuming' } };
      await ps.updatePaused(q, row.id, { points: map, nextTimeoutAt: ps.nextTimeout(map) });
      return claimed && nextPoint ? { paused: { ...row, pause_points: map }, entry: claimed } : undefined;
    });
    if (handed) next.push(handed);
  }
  return next;
}
