import type { JobQueue, ReservedSlot } from './port.js';

/** One dispatch of a job: its id and dispatch number (see JobQueue.enqueue). */
const dispatchKey = (jobId: string, dispatch: number) => `${jobId}\n${dispatch}`;

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
  /** Slots taken by `reserve` whose run is not started yet. */
  private reserved = 0;

  constructor(private readonly concurrency: number, private readonly onError: (err: unknown, jobId: string) => void = () => undefined) {}

  async enqueue(jobId: string, dispatch = 0): Promise<void> {
    const key = dispatchKey(jobId, dispatch);
    if (this.closed || this.pending.has(key)) return;
    this.pending.add(key);
    this.waiting.push({ jobId, key });
    this.pump();
  }

  work(handler: (jobId: string) => Promise<void>): void {
    this.handler = handler;
    this.pump();
  }

  reserve(): ReservedSlot | undefined {
    if (this.closed || !this.handler || this.waiting.length > 0 || this.running.size + this.reserved >= this.concurrency) return undefined;
    this.reserved++;
    let settled = false;
    const settle = () => {
      if (settled) throw new Error('a reserved worker slot is started or released once');
      settled = true;
      this.reserved--;
    };
    return {
      start: (jobId, job) => {
        settle();
        // Closed meanwhile: the run is not started here; its lease lapses and recovery runs it.
        if (this.closed) return;
        const key = dispatchKey(jobId, 0);
        this.pending.add(key);
        this.launch(jobId, key, job);
      },
      release: () => {
        settle();
        this.pump();
      },
    };
  }

  private pump(): void {
    const handler = this.handler;
    if (!handler) return;
    while (!this.closed && this.running.size + this.reserved < this.concurrency && this.waiting.length > 0) {
      const { jobId, key } = this.waiting.shift() as { jobId: string; key: string };
      this.launch(jobId, key, () => handler(jobId));
    }
  }

  private launch(jobId: string, key: string, job: () => Promise<void>): void {
    const p: Promise<void> = Promise.resolve()
      .then(job)
      .catch((err: unknown) => this.onError(err, jobId))
      .finally(() => {
        this.running.delete(p);
        this.pending.delete(key);
        this.pump();
      });
    this.running.add(p);
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
