/**
 * Group commit: writes submitted while a batch is being committed wait and go together in the next one, so
 * N concurrent requests cost one transaction instead of N. Without a window there is no timer: a write that
 * arrives when nothing is in flight starts a batch at once (alone, at low load), so batching adds no latency;
 * it only forms under load, while the previous commit is under way. Each submitter still waits for the
 * commit of the batch that holds its write, so "committed before the answer" holds.
 *
 * With `windowMs`, a batch is written once its oldest write has waited that long (a full batch goes at
 * once), also under steady load: for writes whose submitter does not wait for them (AI settlements written
 * after the answer), so that traffic costs one transaction per window instead of one per commit's duration
 * (a batch statement's fixed cost dominates a small batch). A write then waits at most the window, or the
 * commit under way when the window ends.
 * `flush()` writes what waits now (shutdown). Where it is used: docs/architecture.md, Embedded database
 * and Credit ledgers.
 */
export interface GroupCommitOptions<T, R> {
  /** Writes a whole batch in one transaction; returns one result per item, in order. */
  writeBatch: (items: readonly T[]) => Promise<R[]>;
  /**
   * Writes one item alone. When a batch fails, each of its items is written again this way, so an item
   * that cannot be written fails alone instead of taking the rest of its batch with it.
   */
  writeOne: (item: T) => Promise<R>;
  /** Upper bound of one batch (a statement's size and the time the database is held). */
  maxBatch?: number;
  /** How long the first write of a batch waits for others before the batch is written (default 0: never). */
  windowMs?: number;
}

interface Waiting<T, R> { item: T; resolve: (r: R) => void; reject: (err: unknown) => void; queuedAt: number }

export class GroupCommit<T, R> {
  private queue: Waiting<T, R>[] = [];
  private writing: Promise<void> | undefined;
  private timer: NodeJS.Timeout | undefined;
  private readonly maxBatch: number;
  private readonly windowMs: number;

  constructor(private readonly opts: GroupCommitOptions<T, R>) {
    this.maxBatch = opts.maxBatch ?? 200;
    this.windowMs = opts.windowMs ?? 0;
  }

  /** Writes not yet committed (waiting for their window or being written). */
  get pending(): number {
    return this.queue.length + (this.writing ? 1 : 0);
  }

  submit(item: T): Promise<R> {
    return new Promise<R>((resolve, reject) => {
      this.queue.push({ item, resolve, reject, queuedAt: this.windowMs > 0 ? Date.now() : 0 });
      this.schedule();
    });
  }

  /** Writes everything submitted so far without waiting for the window; resolves once it is committed (or failed). */
  async flush(): Promise<void> {
    while (this.queue.length > 0 || this.writing) {
      if (!this.writing) this.startDrain();
      await this.writing;
    }
  }

  /** Starts the next batch now, or when the oldest waiting write's window ends; nothing while a commit runs. */
  private schedule(): void {
    if (this.writing || this.queue.length === 0) return;
    if (this.windowMs <= 0 || this.queue.length >= this.maxBatch) {
      this.startDrain();
      return;
    }
    if (this.timer) return;
    const waited = Date.now() - this.queue[0].queuedAt;
    this.timer = setTimeout(() => this.startDrain(), Math.max(0, this.windowMs - waited));
  }

  private startDrain(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    if (this.writing) return;
    this.writing = this.drain().finally(() => {
      this.writing = undefined;
      // Writes that arrived during the last commit: at once, or when the oldest one's window ends.
      this.schedule();
    });
  }

  private async drain(): Promise<void> {
    // Without a window, everything queued meanwhile goes in the next commits; with one, a single batch (the
    // rest waits for its window, or goes at once when full: `schedule`). The next batch is handed to the
    // database before the submitters of the last one resume: their answers are this thread's work, which the
    // database need not wait for (docs/architecture.md, Embedded database).
    let resumeLast: (() => void) | undefined;
    try {
      while (this.queue.length > 0) {
        const written = this.write(this.queue.splice(0, this.maxBatch));
        resumeLast?.();
        resumeLast = await written;
        if (this.windowMs > 0) break;
      }
    } finally {
      resumeLast?.();
    }
  }

  /** Writes a batch; resolves, once it is committed (or failed), to what resumes its submitters. */
  private async write(batch: Waiting<T, R>[]): Promise<() => void> {
    if (batch.length === 1) {
      const [w] = batch;
      try {
        const result = await this.opts.writeOne(w.item);
        return () => w.resolve(result);
      } catch (err) {
        return () => w.reject(err);
      }
    }
    let results: R[];
    try {
      results = await this.opts.writeBatch(batch.map((w) => w.item));
    } catch {
      // Nothing of the batch committed: each item on its own, so only the item at fault fails.
      const outcomes = await Promise.allSettled(batch.map((w) => this.opts.writeOne(w.item)));
      return () => outcomes.forEach((o, i) => (o.status === 'fulfilled' ? batch[i].resolve(o.value) : batch[i].reject(o.reason)));
    }
    return () => batch.forEach((w, i) => w.resolve(results[i]));
  }
}
