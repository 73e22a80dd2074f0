/**
 * Upkeep the embedded database's thread does for itself, in place of PostgreSQL's background processes that
 * PGlite does not have (VACUUM: pglite-vacuum.ts; checkpoints: pglite-checkpoint.ts). Looked at every
 * `intervalMs`, run only when enough statements ran since the last run (an idle database is left alone), one run
 * at a time; each of its statements waits for PGlite's lock like any caller's.
 */
export abstract class DatabaseChore {
  private statements = 0;
  private timer?: ReturnType<typeof setInterval>;
  private running?: Promise<void>;
  protected stopped = false;

  constructor(
    private readonly intervalMs: number,
    private readonly minStatements: number,
    private readonly onError: (err: unknown) => void,
  ) {}

  /** Counts a statement run by the database's users (the measure of activity). */
  noteStatement(): void {
    this.statements++;
  }

  start(): void {
    this.timer = setInterval(() => {
      if (this.running || this.stopped || this.statements < this.minStatements) return;
      this.statements = 0;
      this.running = this.run()
        .catch((err: unknown) => {
          if (!this.stopped) this.onError(err);
        })
        .finally(() => {
          this.running = undefined;
        });
    }, this.intervalMs);
    this.timer.unref();
  }

  /** No new run starts; resolves once the one under way, if any, is done. */
  async stop(): Promise<void> {
    this.stopped = true;
    clearInterval(this.timer);
    await this.running;
  }

  /** One run of the chore; `stopped` tells a long one to end early. */
  protected abstract run(): Promise<void>;
}
