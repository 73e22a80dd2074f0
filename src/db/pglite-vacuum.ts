/**
 * VACUUM for the embedded database. PostgreSQL's autovacuum runs in background processes that PGlite (one
 * backend, no postmaster) does not have, so without this nothing removes dead row versions or refreshes the
 * table sizes the planner estimates from, and the hot tables slow down as they grow. Measured with the async
 * bench (bench/RESULTS.md, third pass): after 42,000 runs on the same server, 161 to 177 runs/s without it,
 * 1,380 to 1,388 with the defaults below. Runs on the database thread; each table is its own VACUUM, so
 * statements that wait go between them.
 */
import { DatabaseChore } from './pglite-chore.js';

export interface VacuumOptions {
  /** How often to look (ms). */
  intervalMs: number;
  /** Statements run since the last pass before another is due: an idle database is left alone. */
  minStatements: number;
}

export const DEFAULT_VACUUM: VacuumOptions = { intervalMs: 10_000, minStatements: 1_000 };

/** What a pass needs of PGlite: one statement at a time, each outside any transaction. */
export interface VacuumTarget {
  exec(sql: string): Promise<unknown>;
  query<T>(sql: string): Promise<{ rows: T[] }>;
}

export class EmbeddedVacuum extends DatabaseChore {
  constructor(
    private readonly db: VacuumTarget,
    opts: VacuumOptions,
    onError: (err: unknown) => void,
  ) {
    super(opts.intervalMs, opts.minStatements, onError);
  }

  protected async run(): Promise<void> {
    const tables = await this.db.query<{ name: string }>(
      `SELECT quote_ident(relname) AS name FROM pg_class WHERE relnamespace = 'public'::regnamespace AND relkind = 'r' ORDER BY relname`,
    );
    for (const t of tables.rows) {
      if (this.stopped) return;
      await this.db.exec(`VACUUM ${t.name}`);
    }
  }
}
