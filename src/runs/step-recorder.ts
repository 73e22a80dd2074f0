import type { StepRecord, StepRecording } from '../engine/index.js';
import type { TimedStep } from './store.js';

/**
 * How long a pure step's record may wait for the run's next write before it is sent alone: the live timeline
 * of a run busy in a long block (docs/architecture.md, Run lifecycle) shows it after at most this.
 */
const HELD_RECORD_DELAY_MS = 200;

/**
 * The durable step records of one async run (docs/architecture.md, Run lifecycle). A step is committed before
 * its dependants start. Two kinds of record are held back instead of written on their own:
 * - a pure block's (the entry block, a response), which replay recomputes if it is lost: it goes in the same
 *   statement as the run's next committed record, or alone after HELD_RECORD_DELAY_MS, or never when the run
 *   ends first;
 * - the run's last step (after it at most a response block): the run's final state follows at once and makes
 *   it useless, so it is written only if the run does not end (`flush` before a pause, `handOver` at shutdown).
 * So an async run of start -> function (-> response) writes no step record, and start -> function -> function
 * one statement of two records. A record lost to a crash before the final write costs what a crash during the
 * block costs: the block runs again.
 */
export class StepRecorder {
  /** Records held back, oldest first. */
  private held: TimedStep[] = [];
  private timer: NodeJS.Timeout | undefined;
  /** Held records sent after their delay, not settled yet. */
  private readonly sent = new Set<Promise<void>>();
  /** Microseconds since the epoch of the last record: strictly increasing, so records keep their order. */
  private lastMicros = 0;

  constructor(
    private readonly executionId: string,
    /** Commits records in one statement (retrying as the caller sees fit), or throws. */
    private readonly write: (steps: readonly TimedStep[]) => Promise<void>,
    /** Sends records once, without retries. */
    private readonly send: (steps: readonly TimedStep[]) => Promise<void>,
    private readonly delayMs = HELD_RECORD_DELAY_MS,
  ) {}

  /** The engine's `onStep`. */
  async record(step: StepRecord, how: StepRecording): Promise<void> {
    // A pure step that ends the run is never needed: the run's final state follows, and a replay recomputes it.
    if (how.recomputable && how.endsRun) return;
    const timed: TimedStep = { executionId: this.executionId, step, finishedAt: this.now() };
    if (how.recomputable || how.endsRun) {
      this.held.push(timed);
      if (how.recomputable) this.sendHeldLater();
      return;
    }
    return this.write(this.takeHeld(timed));
  }

  /**
   * Commits every held record and waits for those sent after their delay: before the run's records are read
   * back (a pause's snapshot) or the run is handed to another holder. Throws when the commit fails.
   */
  async flush(): Promise<void> {
    const held = this.takeHeld();
    if (held.length > 0) await this.write(held);
    await Promise.all([...this.sent]);
  }

  /**
   * Sends every held record once, without retries, and waits for it: a run handed back at shutdown, which must
   * not wait out a database outage. Never throws (a lost record's block runs again).
   */
  async handOver(): Promise<void> {
    const held = this.takeHeld();
    if (held.length > 0) await this.send(held).catch(() => undefined);
    await Promise.all([...this.sent]);
  }

  /** The run ended (its final state is written, or it is left to another holder): held records are dropped. */
  discard(): void {
    this.takeHeld();
  }

  private takeHeld(last?: TimedStep): TimedStep[] {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    const taken = this.held;
    this.held = [];
    if (last) taken.push(last);
    return taken;
  }

  private sendHeldLater(): void {
    if (this.timer) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      const held = this.takeHeld();
      const p = this.send(held).catch(() => undefined); // lost: replay recomputes them
      this.sent.add(p);
      void p.finally(() => this.sent.delete(p));
    }, this.delayMs);
    this.timer.unref();
  }

  /** Now, to the microsecond, and later than the previous record of this run even within one millisecond. */
  private now(): string {
    this.lastMicros = Math.max(Date.now() * 1000, this.lastMicros + 1);
    const ms = Math.floor(this.lastMicros / 1000);
    const micros = String(this.lastMicros % 1000).padStart(3, '0');
    return new Date(ms).toISOString().replace('Z', `${micros}Z`);
  }
}
