import type { Logger } from 'pino';
import { retryWhileUnavailable, type Queryable } from '../db/database.js';
import * as store from './store.js';

// The lease a process holds on a run's row while it runs it (docs/architecture.md, Run dispatch): renewed
// every third of its length, so a process that dies lets it lapse and another takes the run over, and a
// renewal is where a cancel asked through another process is seen.

export interface LeaseHolding {
  db: Queryable;
  leaseMs: number;
  log: Logger;
  executionId: string;
  /** The lease is already held (taken by the statement that leased the run): no first renewal. */
  alreadyHeld?: boolean;
  /** A renewal found the run asked to stop. */
  onCancel?: () => void;
  /** Renewals fenced by the lease's attempt: `onLost` runs once another holder took the run over. */
  held?: { attempt: number; onLost: () => void };
}

/** Takes the row's lease (unless already held) and renews it until the returned function is called. */
export async function holdLease(h: LeaseHolding): Promise<() => void> {
  const { db, leaseMs, executionId } = h;
  if (!h.alreadyHeld && (await store.renewLease(db, executionId, leaseMs)) === 'cancel') h.onCancel?.();
  const timer = setInterval(() => {
    // A dropped connection is retried until the next renewal is due; the lease outlasts two misses.
    retryWhileUnavailable(() => store.renewLease(db, executionId, leaseMs, h.held?.attempt), { deadlineMs: leaseMs / 3 })
      .then((state) => {
        if (state === 'cancel') h.onCancel?.();
        else if (state === 'lost') {
          clearInterval(timer);
          h.held?.onLost();
        }
      })
      .catch((err: unknown) => h.log.warn({ err, executionId }, 'lease renewal failed'));
  }, leaseMs / 3);
  return () => clearInterval(timer);
}
