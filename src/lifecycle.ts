// The process's background machinery (workers, timers, listeners, connections) as one ordered list, built by
// the composition root (docs/architecture.md, Composition root). Started in order once the process answers;
// stopped in reverse, so nothing is stopped while something started after it may still use it.
import type { Logger } from 'pino';

export interface Lifecycle {
  /** Said in the log when stopping it fails. */
  name: string;
  /** Absent: nothing to start (it runs from construction, or this process does not run it). */
  start?(): void | Promise<void>;
  /** Called for every entry on stop, started or not: a stop must be safe on something never started. */
  stop?(): void | Promise<void>;
}

export class Lifecycles {
  private readonly entries: Lifecycle[] = [];
  private stopping: Promise<void> | undefined;

  constructor(private readonly log: Pick<Logger, 'error'>) {}

  /** Adds an entry after every one added so far: it starts after them and stops before them. */
  add(entry: Lifecycle): void {
    this.entries.push(entry);
  }

  get names(): string[] {
    return this.entries.map((entry) => entry.name);
  }

  /** Starts each entry in order; the first failure is thrown (the caller stops the process). */
  async start(): Promise<void> {
    for (const entry of this.entries) await entry.start?.();
  }

  /** Stops each entry in reverse order, once; a failure is logged and the next one still stops. */
  stop(): Promise<void> {
    this.stopping ??= (async () => {
      for (const entry of [...this.entries].reverse()) {
        try {
          await entry.stop?.();
        } catch (err) {
          this.log.error({ err, lifecycle: entry.name }, `stopping ${entry.name} failed`);
        }
      }
    })();
    return this.stopping;
  }
}
