/**
 * The embedded database thread's activity counters (the `weft_db_*` metrics), kept in memory that the thread
 * and the process's main thread share. Read without a message to the thread, a scrape of /metrics never waits
 * behind a long statement; and the counters outlive the thread, so a restart of it (pglite-thread.ts, a
 * bounded transaction stopped) does not reset them. Integers in microseconds with atomic access: the two
 * threads never see half of a value.
 */
const DONE_US = 0; // busy time of the intervals that ended
const SINCE_US = 1; // start of the busy interval under way (wall clock), 0 when idle
const STATEMENTS = 2;
const FILE_SYNCS = 3;
const CELLS = 4;

/** Microseconds on the wall clock, comparable between threads (each thread's `performance.now()` has its own origin). */
const nowUs = (): bigint => BigInt(Math.round((performance.timeOrigin + performance.now()) * 1000));

export interface ActivitySnapshot { busySeconds: number; statements: number; fileSyncs: number }

export class SharedActivity {
  private readonly cells: BigInt64Array;
  private inFlight = 0;
  /** The largest busy total read so far: a counter never goes back (see `read`). */
  private readBusyUs = 0n;

  /** Memory for a new set of counters, handed to the database thread in its `workerData`. */
  static allocate(): SharedArrayBuffer {
    return new SharedArrayBuffer(CELLS * BigInt64Array.BYTES_PER_ELEMENT);
  }

  constructor(buffer: SharedArrayBuffer, private readonly now: () => bigint = nowUs) {
    this.cells = new BigInt64Array(buffer);
  }

  /** Work on this thread begins (pair it with one `end`); overlapping work is counted once. */
  begin(): void {
    if (this.inFlight++ === 0) Atomics.store(this.cells, SINCE_US, this.now());
  }

  end(): void {
    if (this.inFlight === 0) return;
    if (--this.inFlight === 0) this.closeInterval();
  }

  /** Runs `work` as one piece of busy time. */
  async track<T>(work: () => Promise<T>): Promise<T> {
    this.begin();
    try {
      return await work();
    } finally {
      this.end();
    }
  }

  statementRan(): void {
    Atomics.add(this.cells, STATEMENTS, 1n);
  }

  fileSynced(): void {
    Atomics.add(this.cells, FILE_SYNCS, 1n);
  }

  /**
   * The thread that kept these counters was stopped (terminated): the interval it had under way ends now,
   * so the next thread starts from the same totals.
   */
  threadStopped(): void {
    this.inFlight = 0;
    this.closeInterval();
  }

  /**
   * The totals so far, the busy interval under way included. The interval may end between the loads: the total
   * read then falls short by at most that instant's time, and is never below an earlier read (a Prometheus
   * counter that went back would read as a reset).
   */
  read(): ActivitySnapshot {
    const done = Atomics.load(this.cells, DONE_US);
    const since = Atomics.load(this.cells, SINCE_US);
    const open = since > 0n ? this.now() - since : 0n;
    const busyUs = done + (open > 0n ? open : 0n);
    if (busyUs > this.readBusyUs) this.readBusyUs = busyUs;
    return {
      busySeconds: Number(this.readBusyUs) / 1e6,
      statements: Number(Atomics.load(this.cells, STATEMENTS)),
      fileSyncs: Number(Atomics.load(this.cells, FILE_SYNCS)),
    };
  }

  private closeInterval(): void {
    const since = Atomics.exchange(this.cells, SINCE_US, 0n);
    if (since > 0n) Atomics.add(this.cells, DONE_US, this.now() - since);
  }
}
