/** Dispatches durable jobs (their state lives in the database) to a worker handler. */
export interface JobQueue {
  /** Schedules a job whose database row is already committed. */
  enqueue(jobId: string): Promise<void>;
  /** Starts delivering jobs to `handler`, at most `concurrency` at a time. */
  work(handler: (jobId: string) => Promise<void>): void;
  /** Stops taking jobs and waits up to `graceMs` for the running ones. */
  close(graceMs?: number): Promise<void>;
  /** Jobs waiting plus running, for back-pressure and tests. */
  size(): number;
}
