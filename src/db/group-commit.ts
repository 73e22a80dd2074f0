/**
 * Group commit: writes submitted while a batch is being committed wait and go together in the next one, so
 * N concurrent requests cost one transaction instead of N. There is no timer: a write that arrives when
 * nothing is in flight starts a batch at once (alone, at low load), so batching adds no latency; it only
 * forms under load, while the previous commit is under way. Each submitter still waits for the commit of
 * the batch that holds its write, so "committed before the answer" holds. Where it is used:
 * docs/architecture.md, Embedded database.
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
}

interface Waiting<T, R> { item: T; resolve: (r: R) => void; reject: (err: unknown) => void }

export class GroupCommit<T, R> {
  private queue: Waiting<T, R>[] = [];
  private writing = false;
  private readonly maxBatch: number;

  constructor(private readonly opts: GroupCommitOptions<T, R>) {
    this.maxBatch = opts.maxBatch ?? 200;
  }

  submit(item: T): Promise<R> {
    return new Promise<R>((resolve, reject) => {
      this.queue.push({ item, resolve, reject });
      if (!this.writing) void this.drain();
    });
  }

  private async drain(): Promise<void> {
    this.writing = true;
    try {
      while (this.queue.length > 0) {
        const batch = this.queue.splice(0, this.maxBatch);
        await this.write(batch);
      }
    } finally {
      this.writing = false;
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
