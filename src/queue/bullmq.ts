import { Queue, Worker } from 'bullmq';
import type { JobQueue } from './port.js';

const QUEUE_NAME = 'weft-runs';

/**
 * Scaled-out dispatch through BullMQ on Redis: any worker process may take a job. The database row
 * stays the source of truth (a worker leases it before running), so a job Redis lost is found
 * again by the sweeper and a duplicate delivery does nothing.
 */
export class BullMqQueue implements JobQueue {
  private readonly queue: Queue;
  private worker?: Worker;
  private running = 0;
  private closing?: Promise<void>;

  constructor(private readonly redisUrl: string, private readonly concurrency: number, private readonly prefix = 'weft') {
    this.queue = new Queue(QUEUE_NAME, { connection: { url: redisUrl }, prefix });
  }

  async enqueue(jobId: string): Promise<void> {
    // BullMQ job ids may not contain ':'; caller-chosen execution ids may.
    await this.queue.add('run', { executionId: jobId }, {
      jobId: Buffer.from(jobId).toString('base64url'),
      removeOnComplete: { count: 1000 },
      removeOnFail: { count: 1000 },
    });
  }

  work(handler: (jobId: string) => Promise<void>): void {
    this.worker = new Worker(QUEUE_NAME, async (job) => {
      this.running++;
      try {
        await handler(String((job.data as { executionId: string }).executionId));
      } finally {
        this.running--;
      }
    }, { connection: { url: this.redisUrl, maxRetriesPerRequest: null }, concurrency: this.concurrency, prefix: this.prefix });
    this.worker.on('error', () => undefined); // connection errors are retried by the client
  }

  size(): number {
    return this.running;
  }

  close(graceMs = 10_000): Promise<void> {
    this.closing ??= this.shutdown(graceMs);
    return this.closing;
  }

  private async shutdown(graceMs: number): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    const forced = new Promise<void>((resolve) => {
      timer = setTimeout(() => {
        void this.worker?.close(true);
        resolve();
      }, graceMs);
    });
    await Promise.race([this.worker?.close() ?? Promise.resolve(), forced]);
    clearTimeout(timer);
    await this.queue.close();
  }
}
