/**
 * Runs queued items in batches: whatever queued up while the previous batch ran goes next (group
 * commit). A request alone is run at once, after one turn of the event loop.
 */
export class Batcher<I, O> {
  private pending: { item: I; resolve: (o: O) => void; reject: (e: unknown) => void }[] = [];
  private running = false;

  constructor(private readonly exec: (items: I[]) => Promise<O[]>, private readonly max = 200) {}

  run(item: I): Promise<O> {
    return new Promise<O>((resolve, reject) => {
      this.pending.push({ item, resolve, reject });
      if (!this.running) {
        this.running = true;
        // One turn of the event loop first: requests whose I/O is already waiting join the batch
        // (with PGlite a statement runs on this thread, so nothing else could queue meanwhile).
        setImmediate(() => void this.drain());
      }
    });
  }

  private async drain(): Promise<void> {
    try {
      while (this.pending.length > 0) {
        const batch = this.pending.splice(0, this.max);
        try {
          const out = await this.exec(batch.map((b) => b.item));
          batch.forEach((b, i) => b.resolve(out[i]));
        } catch (err) {
          batch.forEach((b) => b.reject(err));
        }
      }
    } finally {
      this.running = false;
    }
  }
}
