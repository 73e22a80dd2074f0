/** One outbound call's abort signal: the caller's, plus a timeout that ends with the call. */
export interface Deadline {
  signal: AbortSignal;
  /** The call is over: clears the timer and lets go of the caller's signal. */
  end(): void;
}

/**
 * A signal aborted when `caller` is (with its reason), or after `timeoutMs` with a TimeoutError (the reason
 * AbortSignal.timeout gives, which callers tell apart from a cancellation). `end()` clears the timer and the
 * listener at once. AbortSignal.timeout's timer cannot be cleared (it goes when its signal is collected), and
 * AbortSignal.timeout joined to the caller's signal with AbortSignal.any cost 17 to 35 us a call against about
 * 8 us for this (bench/RESULTS.md, "upstream deadlines"): on the AI gateway's path, per request.
 */
export function deadline(timeoutMs: number, caller?: AbortSignal, message = `timed out after ${timeoutMs} ms`): Deadline {
  const controller = new AbortController();
  const onCallerAbort = () => controller.abort(caller?.reason);
  const timer = setTimeout(() => controller.abort(new DOMException(message, 'TimeoutError')), timeoutMs);
  timer.unref();
  if (caller?.aborted) onCallerAbort();
  else caller?.addEventListener('abort', onCallerAbort, { once: true });
  return {
    signal: controller.signal,
    end: () => {
      clearTimeout(timer);
      caller?.removeEventListener('abort', onCallerAbort);
    },
  };
}
