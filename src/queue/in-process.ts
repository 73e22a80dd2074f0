import type { JobQueue } from './port.js';

/**
 * Embedded dispatcher: an in-memory FIFO in front of the durable rows. Enqueue wakes a worker at
 * once (no polling); rows survive a crash and are re-enqueued by the recovery sweep at start-up.
 */
export class InProcessQueue implements JobQueue {
  private readonly waiting: string[] = [];
  private readonly queued = new Set<string>();
  private readonly running = new Set<Promise<void>>();
  private handler?: (jobId: string) => Promise<void>;
  private closed = false;

  constructor(private readonly concurrency: number, private readonly onError: (err: unknown, jobId: string) => void = () => undefined) {}

  async enqueue(jobId: string): Promise<void> {
    if (this.closed || this.queued.has(jobId)) return;
    this.queued.add(jobId);
    this.waiting.push(jobId);
    this.pump();
  }

  work(handler: (jobId: string) => Promise<void>): void {
    this.handler = handler;
    this.pump();
  }

  size(): number {
    return this.waiting.length + this.running.size;
  }

  private pump(): void {
    const handler = this.handler;
    if (!handler) return;
    while (!this.closed && this.running.size < this.concurrency && this.waiting.length > 0) {
      const jobId = this.waiting.shift() as string;
      const p: Promise<void> = handler(jobId)
        .catch((err: unknown) => this.onError(err, jobId))
        .finally(() => {
          this.running.delete(p);
          this.queued.delete(jobId);
          this.pump();
        });
      this.running.add(p);
    }
  }

  async close(graceMs = 10_000): Promise<void> {
    this.closed = true;
    this.waiting.length = 0;
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
