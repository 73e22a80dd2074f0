import type { Database } from '../db/database.js';

/**
 * Keeps the planner's statistics of `table_rows` fresh on embedded PGlite. PostgreSQL's autovacuum
 * keeps the table analyzed; PGlite has no autovacuum, so after as many row changes as autovacuum's
 * default rule would wait for (50 + 10 % of the rows), and at most once per interval like autovacuum's
 * nap time, `ANALYZE table_rows` runs here in the background, outside any transaction.
 */
export class PlannerStats {
  private changed = 0;
  private rows = 0;
  private running = false;
  private last = 0;

  constructor(
    private readonly db: Database,
    private readonly log?: { warn(obj: object, msg: string): void },
    private readonly intervalMs = 30_000,
  ) {}

  /** Counts `n` row changes (inserted, updated or deleted rows) and starts an ANALYZE when due. */
  noteRowChanges(n: number): void {
    if (this.db.mode !== 'pglite' || n <= 0) return;
    this.changed += n;
    const now = Date.now();
    if (this.running || this.changed < 50 + 0.1 * this.rows || now - this.last < this.intervalMs) return;
    this.running = true;
    this.changed = 0;
    this.last = now;
    this.analyze()
      .catch((err: unknown) => this.log?.warn({ err }, 'ANALYZE table_rows failed'))
      .finally(() => {
        this.running = false;
      });
  }

  private async analyze(): Promise<void> {
    await this.db.exec('ANALYZE table_rows');
    const r = await this.db.query<{ n: number }>("SELECT reltuples::float8 AS n FROM pg_class WHERE relname = 'table_rows'");
    this.rows = Math.max(0, Number(r[0]?.n ?? 0));
  }
}
