import { type Database, type Queryable, statementCancelled } from '../db/database.js';
import { HttpError } from '../http/errors.js';

/**
 * How long one statement of a query a tenant shapes (a table filter, an update or delete by filter, a
 * knowledge search) may run on PostgreSQL before it is cancelled: `SET LOCAL statement_timeout` in its
 * transaction, and the cancel answered 503 `QUERY_TIMEOUT`. The embedded database cannot interrupt a
 * statement, so there these queries are bounded by construction instead and this does nothing
 * (docs/architecture.md, Tables: bounded statements).
 */
export class QueryTimeout {
  /** `ms` 0 never cancels. */
  constructor(readonly ms: number) {
    if (!Number.isSafeInteger(ms) || ms < 0) throw new Error(`the query timeout must be a whole number of ms, got ${ms}`);
  }

  private applies(db: Pick<Database, 'mode'>): boolean {
    return db.mode === 'postgres' && this.ms > 0;
  }

  /** Runs `fn`'s statements bounded: in a transaction of their own on PostgreSQL, on `db` itself otherwise. */
  run<T>(db: Database, what: string, fn: (q: Queryable) => Promise<T>): Promise<T> {
    if (!this.applies(db)) return fn(db);
    return this.answering(what, db.tx(async (q) => {
      await this.bound(db, q);
      return fn(q);
    }));
  }

  /** Bounds the statements that follow in the open transaction `q` of `db`. */
  async bound(db: Pick<Database, 'mode'>, q: Queryable): Promise<void> {
    // The value is a checked integer: no parameter is possible in SET.
    if (this.applies(db)) await q.query(`SET LOCAL statement_timeout = ${this.ms}`);
  }

  /** `work`'s result, a statement cancelled by this timeout becoming its 503. */
  async answering<T>(what: string, work: Promise<T>): Promise<T> {
    try {
      return await work;
    } catch (err) {
      if (statementCancelled(err)) {
        throw new HttpError(503, `The ${what} ran past ${this.ms} ms and was stopped: narrow the filter, or filter on equality of a column`,
          { code: 'QUERY_TIMEOUT' });
      }
      throw err;
    }
  }
}
