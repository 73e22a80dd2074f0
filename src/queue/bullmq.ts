import { createRequire } from 'node:module';
import type { Queue, Worker } from 'bullmq';
import type { JobQueue } from './port.js';

const QUEUE_NAME = 'weft-runs';

/**
 * Scaled-out dispatch through BullMQ on Redis: any worker process may take a job. The database row
 * stays the source of truth (a worker leases it before running), so a job Redis lost is found
 * again by the sweeper and a duplicate delivery does nothing.
 */
/** BullMQ and ioredis take about 150 ms to load: only a process given REDIS_URL loads them. */
const bullmq = () => createRequire(import.meta.url)('bullmq') as typeof import('bullmq');

export class BullMqQueue implements JobQueue {
  private readonly queue: Queue;
  private worker?: Worker;
  /** Handlers in flight in this process; every `close` call waits for them again. */
  private readonly running = new Set<Promise<void>>();
  private closed = false;
  /** Graceful worker close then queue close, started once by the first `close`. */
  private shutdown?: Promise<void>;

  constructor(private readonly redisUrl: string, private readonly concurrency: number, private readonly prefix = 'weft') {
    this.queue = new (bullmq().Queue)(QUEUE_NAME, { connection: { url: redisUrl }, prefix });
    this.queue.on('error', () => undefined); // reported by the failing call; the client reconnects
  }

  async enqueue(jobId: string, dispatch = 0): Promise<void> {
    if (this.closed) return;
    // BullMQ job ids may not contain ':'; caller-chosen execution ids may. BullMQ ignores an add whose
    // id it still holds: the dispatch number makes a takeover a new job even while the dead holder's
    // job still counts as active, and finished jobs are removed at once so a row can be enqueued
    // again (recovery, resume).
    await this.queue.add('run', { executionId: jobId }, {
      jobId: `${Buffer.from(jobId).toString('base64url')}.${dispatch}`,
      removeOnComplete: true,
      removeOnFail: true,
    });
  }

  work(handler: (jobId: string) => Promise<void>): void {
    if (this.worker || this.closed) return;
    this.worker = new (bullmq().Worker)(QUEUE_NAME, async (job) => {
      const p = handler(String((job.data as { executionId: string }).executionId));
      const tracked = p.then(() => undefined, () => undefined);
      this.running.add(tracked);
      try {
        await p;
      } finally {
        this.running.delete(tracked);
      }
    }, {
      connection: { url: this.redisUrl, maxRetriesPerRequest: null }, concurrency: this.concurrency, prefix: this.prefix,
      // The database row decides whether a job runs: a stalled job goes back to wait however often it
      // stalls, never to BullMQ's failed set, where its id would block every later re-dispatch.
      maxStalledCount: Number.MAX_SAFE_INTEGER,
      // A job held by a dead worker is seen as stalled and delivered again within about 12 s (BullMQ's
      // defaults: up to 60 s). The sweep re-dispatches a dead holder's run under a new job id at once,
      // but a delivery that died before its worker leased the row leaves the same id behind (the row's
      // lease count did not change): only the stall check frees it. Locks are renewed every 4 s.
      lockDuration: 8_000,
      stalledInterval: 4_000,
    });
    this.worker.on('error', () => undefined); // connection errors are retried by the client
  }

  async close(graceMs = 10_000): Promise<void> {
    this.closed = true;
    // BullMQ's Worker.close memoizes its first call (a later `close(true)` does not force it), so
    // it is called once, gracefully: it stops fetching, keeps the locks of running jobs renewed and
    // resolves when they are done. Each call of ours waits for that, up to its own grace.
    const worker = this.worker;
    this.shutdown ??= (async () => {
      try {
        await worker?.close();
      } finally {
        await this.queue.close();
      }
    })();
    this.shutdown.catch(() => undefined);
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      Promise.allSettled([this.shutdown, ...this.running]),
      new Promise((resolve) => {
        timer = setTimeout(resolve, graceMs);
      }),
    ]);
    clearTimeout(timer);
  }
}
