// Waiting for a document's processing on the server: `GET .../documents/{id}?wait=N` answers once the
// document is completed or failed, or after N seconds, so a client that wants the outcome spends one
// request (one token of its API bucket) per N seconds instead of one per poll.
import { setTimeout as sleep } from 'node:timers/promises';

/** The longest one GET may wait (seconds): below the idle timeouts of common proxies and load balancers. */
export const MAX_DOCUMENT_WAIT_SECONDS = 30;

const FIRST_PAUSE_MS = 100;
const LONGEST_PAUSE_MS = 1_000;

const inProgress = (status: string): boolean => status === 'pending' || status === 'processing';

/**
 * Reads a document until its processing has ended, for at most `waitMs`, or until `signal` aborts (the
 * client went away, the server is closing); answers the last read. The ingest may run in another process
 * (scaled out), so this re-reads the row, backing off from 100 ms to 1 s, rather than waiting for an
 * event only this process would see.
 */
export async function readWhenProcessed<D extends { processingStatus: string }>(
  read: () => Promise<D>, waitMs: number, signal: AbortSignal, now: () => number = Date.now,
): Promise<D> {
  const deadline = now() + waitMs;
  let pause = FIRST_PAUSE_MS;
  for (;;) {
    const document = await read();
    const left = deadline - now();
    if (!inProgress(document.processingStatus) || left <= 0 || signal.aborted) return document;
    try {
      await sleep(Math.min(pause, left), undefined, { signal });
    } catch {
      return read();
    }
    pause = Math.min(LONGEST_PAUSE_MS, pause * 2);
  }
}
