import { type Database, type Queryable, statementCancelled } from '../db/database.js';
import { HttpError } from '../http/errors.js';

/** The error code of a scan this timeout stopped (the 503's body; WorkspaceGate starts its cool-down on it). */
export const QUERY_TIMEOUT_CODE = 'QUERY_TIMEOUT';

/** The default (WEFT_QUERY_TIMEOUT_MS): past any interactive use, short of a stall everyone notices for long. */
export const DEFAULT_QUERY_TIMEOUT_MS = 10_000;

/**
 * A workspace whose scan ran out of its time gets no scan for this many times the timeout (WorkspaceGate): a
 * tenant sending such scans back to back then holds the database a seventh of the time at most, not all of it.
 */
export const QUERY_COOLDOWN_FACTOR = 6;

/**
 * How long a query a tenant shapes (a table filter, an update or delete by filter, a knowledge search) may
 * hold the database: its statements run in `Database.boundedTx`, which on PostgreSQL cancels a statement past
 * it and on the embedded database takes the database back from the transaction (docs/architecture.md,
 * Tables: bounded statements). Either way the caller's answer is a 503 `QUERY_TIMEOUT`.
 */
export class QueryTimeout {
  /** `ms` 0 never stops a query. */
  constructor(readonly ms: number) {
    if (!Number.isSafeInteger(ms) || ms < 0) throw new Error(`the query timeout must be a whole number of ms, got ${ms}`);
  }

  /** A read: `fn`'s statements in a bounded transaction of their own (none when unbounded), its timeout a 503. */
  run<T>(db: Database, what: string, fn: (q: Queryable) => Promise<T>): Promise<T> {
    return this.ms > 0 ? this.answering(what, db.boundedTx(this.ms, fn)) : fn(db);
  }

  /** A transaction bounded by this timeout (a write's own: the caller maps its errors, see `answering`). */
  tx<T>(db: Database, fn: (q: Queryable) => Promise<T>): Promise<T> {
    return this.ms > 0 ? db.boundedTx(this.ms, fn) : db.tx(fn);
  }

  /** `work`'s result, a statement this timeout stopped becoming its 503. */
  async answering<T>(what: string, work: Promise<T>): Promise<T> {
    try {
      return await work;
    } catch (err) {
      if (statementCancelled(err)) {
        throw new HttpError(503, `The ${what} ran past ${this.ms} ms and was stopped: narrow the filter, or filter on equality of a column`,
          { code: QUERY_TIMEOUT_CODE });
      }
      throw err;
    }
  }
}
