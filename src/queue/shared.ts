import type { JobQueue, ReservedSlot } from './port.js';

export type JobHandler = (jobId: string) => Promise<void>;

/** What an area needs to dispatch its own durable jobs through the shared queue. */
export interface JobChannel {
  /** See JobQueue.enqueue for `dispatch`. */
  enqueue(jobId: string, dispatch?: number): Promise<void>;
  work(handler: JobHandler): void;
  /** See JobQueue.reserve: only once this kind's handler works in this process. */
  reserve?(): ReservedSlot | undefined;
}

/**
 * Several kinds of durable job share one queue (one worker pool, one BullMQ queue when scaled). A
 * kind's ids travel as `<kind>/<id>`; '/' is in neither a UUID nor the caller alphabet of execution
 * ids, so async runs keep travelling under their bare execution id (the default kind).
 */
export class SharedJobQueue {
  private readonly handlers = new Map<string, JobHandler>();
  private defaultHandler?: JobHandler;
  private working = false;

  constructor(readonly queue: JobQueue, private readonly onUnrouted: (jobId: string) => void = () => undefined) {}

  /** The channel of one kind; `undefined` is the default kind (bare ids). */
  channel(kind?: string): JobChannel {
    if (kind !== undefined && !/^[a-z][a-z0-9-]*$/.test(kind)) throw new Error(`invalid job kind "${kind}"`);
    return {
      enqueue: (jobId, dispatch) => this.queue.enqueue(kind === undefined ? jobId : `${kind}/${jobId}`, dispatch),
      work: (handler) => {
        if (kind === undefined) this.defaultHandler = handler;
        else this.handlers.set(kind, handler);
        this.startWorking();
      },
      ...(this.queue.reserve ? {
        reserve: () => ((kind === undefined ? this.defaultHandler : this.handlers.get(kind)) ? this.queue.reserve?.() : undefined),
      } : {}),
    };
  }

  private startWorking(): void {
    if (this.working) return;
    this.working = true;
    this.queue.work(async (jobId) => {
      const slash = jobId.indexOf('/');
      const handler = slash < 0 ? this.defaultHandler : this.handlers.get(jobId.slice(0, slash));
      // A job of a kind this process does not handle yet is left to the database sweep.
      if (!handler) return this.onUnrouted(jobId);
      await handler(slash < 0 ? jobId : jobId.slice(slash + 1));
    });
  }
}
