/**
 * How long some work was under way: the union of the intervals during which at least one piece of it was
 * in flight, so overlapping pieces are not counted twice. The embedded database's thread keeps one for its
 * statements (the `weft_db_busy_seconds_total` metric): time it spent running them, or with one waiting for
 * PGlite's lock behind a transaction. Near one second per second means that thread is saturated.
 */
export class BusyClock {
  private inFlight = 0;
  private since = 0;
  private doneMs = 0;

  constructor(private readonly now: () => number = () => performance.now()) {}

  /** A piece of work begins; pair it with exactly one `end`. */
  begin(): void {
    if (this.inFlight++ === 0) this.since = this.now();
  }

  /** A piece of work ended (finished or failed). */
  end(): void {
    if (this.inFlight === 0) return;
    if (--this.inFlight === 0) this.doneMs += this.now() - this.since;
  }

  /** Runs `work` as one piece. */
  async track<T>(work: () => Promise<T>): Promise<T> {
    this.begin();
    try {
      return await work();
    } finally {
      this.end();
    }
  }

  /** Busy milliseconds so far, the interval under way included. */
  busyMs(): number {
    return this.doneMs + (this.inFlight > 0 ? this.now() - this.since : 0);
  }
}
