/**
 * Dispatches durable jobs (their state lives in the database) to a worker handler. The queue is a
 * wake-up mechanism, not the record: a job it loses is found again by recovery (start-up) or the
 * sweeper (scaled mode), and a duplicate delivery is harmless because the worker leases the row.
 * Which adapter runs where: docs/architecture.md, Run dispatch.
 */
export interface JobQueue {
  /**
   * Schedules a job whose database row is already committed. Enqueueing a job that is still
   * pending (waiting or running) does nothing; once it has finished, the same id can be enqueued
   * (and runs) again. After `close` it does nothing: the committed row is recovered later.
   * `dispatch` tells hand-outs of one row apart (the row's lease count when it is re-dispatched): a
   * queue that deduplicates by id treats another dispatch as a new job, so a row whose holder died is
   * handed out again at once even while the queue still counts the dead holder's job as running.
   */
  enqueue(jobId: string, dispatch?: number): Promise<void>;
  /**
   * Starts delivering jobs to `handler`, at most the adapter's `concurrency` at a time. A handler
   * that throws is not retried by the queue (the row says what happens next).
   */
  work(handler: (jobId: string) => Promise<void>): void;
  /**
   * Stops taking jobs, then waits up to `graceMs` (default 10 s) for the running ones; resolves
   * early when none is left. Safe to call again: every call waits again for the jobs still
   * running, up to its own grace (the service closes with a grace, aborts its runs, then closes
   * again to let them finish). Jobs still running when a grace expires keep running; the
   * adapter's connections are released once they are done.
   */
  close(graceMs?: number): Promise<void>;
  /**
   * Only where the worker shares the process (the in-process queue): takes a free worker slot for a run
   * about to be accepted, so that the run is leased by the statement that accepts it and starts without
   * a second write or a queue wait. Undefined when no slot is free, jobs are waiting (they go first) or
   * no handler works yet: the run is then queued and enqueued as usual.
   */
  reserve?(): ReservedSlot | undefined;
}

/** A worker slot taken by `JobQueue.reserve`: exactly one of `start` and `release` is called. */
export interface ReservedSlot {
  /** Runs `job` (the accepted, already-leased run `jobId`) in the slot; counts as running until it settles. */
  start(jobId: string, job: () => Promise<void>): void;
  /** Gives the slot back (the run was not accepted). */
  release(): void;
}
