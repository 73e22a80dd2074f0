// Polling with exponential backoff, honouring Retry-After when the server asks to slow down.
import { WeftApiError, WeftTimeoutError } from './errors.js';

export interface PollOptions {
  /** Give up after this long (default 10 minutes). */
  timeoutMs?: number;
  /** First wait between two polls (default 100 ms). */
  initialDelayMs?: number;
  /** Longest wait between two polls (default 2 s). */
  maxDelayMs?: number;
  /** Growth of the wait after each poll (default 1.5). */
  factor?: number;
  /** Stops the wait (the promise rejects with the signal's reason). */
  signal?: AbortSignal;
}

const sleep = (ms: number, signal?: AbortSignal) =>
  new Promise<void>((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    signal?.addEventListener('abort', onAbort, { once: true });
  });

/**
 * Calls `poll` until `done` says its value is final, waiting initialDelayMs, then factor times longer
 * each round up to maxDelayMs. A 429 or 503 answer (WeftApiError) waits its Retry-After and polls again;
 * any other error ends the wait. Rejects with WeftTimeoutError after timeoutMs.
 */
export async function pollUntil<T>(poll: () => Promise<T>, done: (value: T) => boolean, options: PollOptions = {}, what = 'the wait'): Promise<T> {
  const { timeoutMs = 600_000, initialDelayMs = 100, maxDelayMs = 2_000, factor = 1.5, signal } = options;
  const deadline = Date.now() + timeoutMs;
  let delay = initialDelayMs;
  for (;;) {
    signal?.throwIfAborted();
    let wait = delay;
    try {
      const value = await poll();
      if (done(value)) return value;
      delay = Math.min(maxDelayMs, delay * factor);
    } catch (err) {
      if (!(err instanceof WeftApiError && (err.status === 429 || err.status === 503))) throw err;
      wait = Math.max(delay, (err.retryAfter ?? 1) * 1000);
    }
    const left = deadline - Date.now();
    if (left <= 0) throw new WeftTimeoutError(`${what} did not finish within ${timeoutMs} ms`);
    await sleep(Math.min(wait, left), signal);
  }
}
