// The lease of a webhook delivery claim while its holder works on it (runs the workflow, stores the answer).
import type { Logger } from 'pino';
import type { Queryable } from '../db/database.js';
import * as store from './store.js';

export interface HeldClaim {
  /** Aborts once the claim is lost: the delivery's run stops, since another holder may now act for it. */
  signal: AbortSignal;
  /** Stops renewing (the holder is done with the claim). */
  stop(): void;
}

/**
 * Renews a delivery claim every third of its lease until stopped. The claim counts as lost when a renewal
 * finds it taken over, or when renewals keep failing until the next one would come after the lease ends
 * (from then on a retry may take the claim over, so the holder must not go on as if it still had it).
 */
export function holdDeliveryClaim(
  db: Queryable, log: Logger, c: { workspaceId: string; key: string; token: string; leaseMs: number },
): HeldClaim {
  const every = Math.max(50, c.leaseMs / 3);
  const lost = new AbortController();
  let heldUntil = Date.now() + c.leaseMs;
  let stopped = false;
  let renewing = false;
  const end = () => {
    stopped = true;
    clearInterval(timer);
  };
  const lose = (why: string, err?: unknown) => {
    if (stopped) return;
    end();
    log.warn({ err, key: c.key }, `webhook claim lost (${why}): its run stops`);
    lost.abort(new Error(`The webhook delivery's claim was lost (${why})`));
  };
  const timer = setInterval(() => {
    if (renewing || stopped) return;
    renewing = true;
    const asked = Date.now();
    store.renewDelivery(db, c.workspaceId, c.key, c.token, c.leaseMs)
      .then((held) => {
        if (stopped) return;
        if (held) heldUntil = asked + c.leaseMs;
        else lose('taken over');
      })
      .catch((err: unknown) => {
        if (stopped) return;
        if (Date.now() + every >= heldUntil) lose('renewal failed', err);
        else log.warn({ err, key: c.key }, 'webhook claim renewal failed; retrying at the next renewal');
      })
      .finally(() => {
        renewing = false;
      });
  }, every);
  return { signal: lost.signal, stop: end };
}
