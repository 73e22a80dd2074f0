// The lease of a webhook delivery claim while its holder works on it (runs the workflow, stores the answer).
import type { Logger } from 'pino';
import type { Queryable } from '../db/database.js';
import { renewedLease, type RenewedLease } from '../db/renewed-lease.js';
import * as store from './store.js';

/**
 * Renews a delivery claim until stopped; its signal aborts (and the delivery's run with it) once the claim
 * is taken over, or cannot be renewed before its lease ends (a retry may take it over from then on).
 */
export function holdDeliveryClaim(
  db: Queryable, log: Logger, c: { workspaceId: string; key: string; token: string; leaseMs: number },
): RenewedLease {
  return renewedLease(() => store.renewDelivery(db, c.workspaceId, c.key, c.token, c.leaseMs), {
    leaseMs: c.leaseMs,
    onLost: (why, err) => log.warn({ err, key: c.key }, `webhook claim lost (${why}): its run stops`),
    onRetry: (err) => log.warn({ err, key: c.key }, 'webhook claim renewal failed; retrying at the next renewal'),
  });
}
