import type { StepRecord, StepRecording } from '../engine/index.js';
import type { TimedStep } from './store.js';

/**
 * The durable step records of one async run (docs/architecture.md, Run lifecycle). A step is committed before
 * its dependants start, except a step that replay recomputes (a pure block's: the entry block, a response):
 * its record is sent without waiting for it, and when it ends the run (a response) it is not written at all, so an
 * async run of start -> function -> response waits for one round trip to the database instead of three and
 * writes two records instead of three. Such a record that is lost costs nothing: replay recomputes it.
 */
export class StepRecorder {
  /** Records sent without waiting, not settled yet. */
  private readonly sent = new Set<Promise<void>>();
  /** Microseconds since the epoch of the last record: strictly increasing, so records keep their order. */
  private lastMicros = 0;

  constructor(
    private readonly executionId: string,
    /** Commits one record (retrying as the caller sees fit), or throws. */
    private readonly write: (step: TimedStep) => Promise<void>,
    /** Sends one record once, without retries. */
    private readonly send: (step: TimedStep) => Promise<void>,
  ) {}

  /** The engine's `onStep`. */
  async record(step: StepRecord, how: StepRecording): Promise<void> {
    // A pure step that ends the run is never needed: the run's final state follows, and a replay recomputes it.
    if (how.recomputable && how.endsRun) return;
    const timed: TimedStep = { executionId: this.executionId, step, finishedAt: this.now() };
    if (!how.recomputable) return this.write(timed);
    const p = this.send(timed).catch(() => undefined);
    this.sent.add(p);
    void p.finally(() => this.sent.delete(p));
  }

  /** Resolves once every record sent without waiting has settled (before the run's records are read back). */
  async settled(): Promise<void> {
    await Promise.all([...this.sent]);
  }

  /** Now, to the microsecond, and later than the previous record of this run even within one millisecond. */
  private now(): string {
    this.lastMicros = Math.max(Date.now() * 1000, this.lastMicros + 1);
    const ms = Math.floor(this.lastMicros / 1000);
    const micros = String(this.lastMicros % 1000).padStart(3, '0');
    return new Date(ms).toISOString().replace('Z', `${micros}Z`);
  }
}
