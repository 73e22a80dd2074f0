import type { JobQueue } from './port.js';

/**
 * Embedded dispatcher: an in-memory FIFO in front of the durable rows. Enqueue wakes a worker at
 * once (no polling); rows survive a crash and are re-enqueued by the recovery sweep at start-up.
 */
export class InProcessQueue implements JobQueue {
  private readonly waiting: { jobId: string; key: string }[] = [];
  /** Dispatches (id and dispatch number) waiting or running: a repeated enqueue of one is ignored. */
  private readonly pending = new Set<string>();
  private readonly running = new Set<Promise<void>>();
  private handler?: (jobId: string) => Promise<void>;
  private closed = false;

  constructor(private readonly concurrency: number, private readonly onError: (err: unknown, jobId: string) => void = () => undefined) {}

  async enqueue(jobId: string, dispatch = 0): Promise<void> {
    const key = `${jobId}\n${dispatch}`;
    if (this.closed || this.pending.has(key)) return;
    this.pending.add(key);
    this.waiting.push({ jobId, key });
    this.pump();
  }

  work(handler: (jobId: string) => Promise<void>): void {
    this.handler = handler;
    this.pump();
  }

  private pump(): void {
    const handler = this.handler;
    if (!handler) return;
    while (!this.closed && this.running.size < this.concurrency && this.waiting.length > 0) {
      const { jobId, key } = this.waiting.shift() as { jobId: string; key: string };
      const p: Promise<void> = Promise.resolve()
        .then(() => handler(jobId))
        .catch((err: unknown) => this.onError(err, jobId))
        .finally(() => {
          this.running.delete(p);
          this.pending.delete(key);
          this.pump();
        });
      this.running.add(p);
    }
  }

  /** Every call waits again (up to its grace) for the jobs still running. */
  async close(graceMs = 10_000): Promise<void> {
    if (!this.closed) {
      this.closed = true;
      for (const w of this.waiting.splice(0)) this.pending.delete(w.key);
    }
    if (this.running.size === 0) return;
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      Promise.allSettled([...this.running]),
      new Promise((resolve) => {
        timer = setTimeout(resolve, graceMs);
      }),
    ]);
    clearTimeout(timer);
  }
}
