/**
 * Group commit: writes submitted while a batch is being committed wait and go together in the next one, so
 * N concurrent requests cost one transaction instead of N. Without a window there is no timer: a write that
 * arrives when nothing is in flight starts a batch at once (alone, at low load), so batching adds no latency;
 * it only forms under load, while the previous commit is under way. Each submitter still waits for the
 * commit of the batch that holds its write, so "committed before the answer" holds.
 *
 * With `windowMs`, the first write of a batch waits up to that long for others to join it (a full batch
 * goes at once): for writes whose submitter does not wait for them (AI settlements written after the
 * answer), so that a steady trickle of requests costs one transaction per window instead of one each.
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

interface Waiting<T, R> { item: T; resolve: (r: R) => void; reject: (err: unknown) => void }

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
      this.queue.push({ item, resolve, reject });
      if (this.writing) return;
      if (this.windowMs <= 0 || this.queue.length >= this.maxBatch) this.startDrain();
      else this.timer ??= setTimeout(() => this.startDrain(), this.windowMs);
    });
  }

  /** Writes everything submitted so far without waiting for the window; resolves once it is committed (or failed). */
  async flush(): Promise<void> {
    while (this.queue.length > 0 || this.writing) {
      if (!this.writing) this.startDrain();
      await this.writing;
    }
  }

  private startDrain(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    if (this.writing) return;
    this.writing = this.drain().finally(() => {
      this.writing = undefined;
      // Writes that arrived during the last commit (after the loop looked) start their own window.
      if (this.queue.length > 0) {
        if (this.windowMs <= 0) this.startDrain();
        else this.timer ??= setTimeout(() => this.startDrain(), this.windowMs);
      }
    });
  }

  private async drain(): Promise<void> {
    while (this.queue.length > 0) {
      const batch = this.queue.splice(0, this.maxBatch);
      await this.write(batch);
    }
  }

  private async write(batch: Waiting<T, R>[]): Promise<void> {
    if (batch.length === 1) {
      await this.opts.writeOne(batch[0].item).then(batch[0].resolve, batch[0].reject);
      return;
    }
    let results: R[];
    try {
      results = await this.opts.writeBatch(batch.map((w) => w.item));
    } catch {
      // Nothing of the batch committed: each item on its own, so only the item at fault fails.
      await Promise.all(batch.map((w) => this.opts.writeOne(w.item).then(w.resolve, w.reject)));
      return;
    }
    batch.forEach((w, i) => w.resolve(results[i]));
  }
}
