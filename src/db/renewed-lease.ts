// A lease on a row (a claim), renewed by its holder while it works, and how the holder learns it lost it.

export interface RenewedLease {
  /** Aborts once the lease is lost: the holder stops, since another process may now act in its place. */
  signal: AbortSignal;
  /** Stops renewing (the holder is done). */
  stop(): void;
}

/**
 * Calls `renew` every third of `leaseMs` until stopped. `renew` extends the lease when this holder still
 * has it (fenced by the holder's token or the row's state) and says whether it did. The lease counts as
 * lost when a renewal finds it gone, or when renewals keep failing until the next one would come after
 * the lease ends: from then on another process may take the row over, so the holder must not go on.
 */
export function renewedLease(
  renew: () => Promise<boolean>,
  opts: { leaseMs: number; onLost: (why: string, err?: unknown) => void; onRetry: (err: unknown) => void },
): RenewedLease {
  const every = Math.max(50, opts.leaseMs / 3);
  const lost = new AbortController();
  let heldUntil = Date.now() + opts.leaseMs;
  let stopped = false;
  let renewing = false;
  const stop = () => {
    stopped = true;
    clearInterval(timer);
  };
  const lose = (why: string, err?: unknown) => {
    if (stopped) return;
    stop();
    opts.onLost(why, err);
    lost.abort(new Error(`The lease was lost (${why})`));
  };
  const timer = setInterval(() => {
    if (renewing || stopped) return;
    renewing = true;
    const asked = Date.now();
    renew()
      .then((held) => {
        if (stopped) return;
        if (held) heldUntil = asked + opts.leaseMs;
        else lose('taken over');
      })
      .catch((err: unknown) => {
        if (stopped) return;
        if (Date.now() + every >= heldUntil) lose('renewal failed', err);
        else opts.onRetry(err);
      })
      .finally(() => {
        renewing = false;
      });
  }, every);
  timer.unref();
  return { signal: lost.signal, stop };
}
