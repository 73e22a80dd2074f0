/** The storage port every area's store uses: parameterized SQL and short transactions. */
export interface Queryable {
  /**
   * One statement with `$n` parameters; rows as plain objects. Both adapters give the same JS
   * types: int8 a number (a bigint beyond 2^53, never a rounded number), numeric a string, jsonb
   * parsed, timestamptz a Date, boolean, null. Pass jsonb values as JSON text (`JSON.stringify`).
   */
  query<T = Record<string, unknown>>(text: string, params?: readonly unknown[]): Promise<T[]>;
  /** Runs several statements without parameters (migrations). */
  exec(text: string): Promise<void>;
}

/**
 * On PostgreSQL, a plain `query`/`exec` that fails because its connection was lost (server restart,
 * killed backend) is retried once on a fresh connection; a lost connection never crashes the process.
 */
export interface Database extends Queryable {
  readonly mode: 'pglite' | 'postgres';
  /**
   * Runs `fn` in one transaction and commits what it did, or rolls all of it back when it throws.
   * - Use only the `q` handed to fn inside it: it has no `tx` (no nesting). Calling this
   *   database's own `query` or `tx` from inside fn waits for the transaction on PGlite (one
   *   connection), which never ends: a deadlock.
   * - A statement that fails inside aborts the transaction: `tx` rejects with that statement's
   *   error even when fn caught it, and nothing commits.
   * - Other callers never see uncommitted writes. Concurrent transactions are isolated (READ
   *   COMMITTED); on PGlite they run one after another.
   * - Keep it to database calls only: on PGlite every other query waits while it is open.
   * - On PostgreSQL, a transaction whose connection was lost before any of its statements ran is
   *   tried once more on a fresh connection; one lost later rejects and nothing of it commits.
   */
  tx<T>(fn: (q: Queryable) => Promise<T>): Promise<T>;
  /**
   * `tx` for work a tenant shapes (a scan), which the database takes back after `timeoutMs` (0: never): the
   * statement running then fails with code 57014 (`statementCancelled`) and nothing of the transaction commits.
   * On PostgreSQL that is `SET LOCAL statement_timeout`, per statement. The embedded database cannot interrupt
   * a statement: its clock runs from when the transaction takes the database's lock, and past it the database
   * thread is stopped and the database opened again on a new one (about 1 s), where the calls that waited behind
   * it then run (docs/architecture.md, Tables: bounded statements). One kept in memory is never cut short.
   */
  boundedTx<T>(timeoutMs: number, fn: (q: Queryable) => Promise<T>): Promise<T>;
  /** Resolves when the database answers. */
  ping(): Promise<void>;
  /** Final; calling it again resolves; queries afterwards reject. */
  close(): Promise<void>;
  /** Connections in use and waiting, for metrics (PGlite: its one connection, and the calls queued behind it). */
  poolStats?(): { total: number; idle: number; waiting: number };
  /**
   * The embedded database's thread so far, for metrics: seconds it was busy (statements, transactions,
   * VACUUM), statements it ran for callers, and files it synced to disk. Absent on PostgreSQL, whose server
   * has its own statistics.
   */
  activity?(): Promise<{ busySeconds: number; statements: number; fileSyncs: number }>;
}

/** A statement PostgreSQL cancelled (57014), as `statement_timeout` does. */
export function statementCancelled(err: unknown): boolean {
  return (err as { code?: unknown } | undefined)?.code === '57014';
}

/** A unique-violation (23505) from either driver, with the constraint name when known. */
export function uniqueViolation(err: unknown): { constraint?: string } | undefined {
  const e = err as { code?: string; constraint?: string } | undefined;
  return e?.code === '23505' ? { constraint: e.constraint } : undefined;
}

const CONNECTION_CODES = new Set(['57P01', '57P02', '08006', '08003', '08000', 'ECONNRESET', 'EPIPE']);
const CONNECTION_MESSAGES = /Connection terminated|terminating connection due to administrator command|Client has encountered a connection error|Connection is closed/i;

/** A connection lost under us (server restart, failover, killed backend), not an error of the statement. */
export function isConnectionError(err: unknown): boolean {
  const e = err as { code?: unknown; message?: unknown } | undefined;
  if (!e) return false;
  if (typeof e.code === 'string' && CONNECTION_CODES.has(e.code)) return true;
  return typeof e.message === 'string' && CONNECTION_MESSAGES.test(e.message);
}

// Besides a lost connection: no server listening (a restart), a server starting up or shutting down
// (57P03), no connection to be had (08001, 08004, 53300 too many connections), a connect timeout.
const UNAVAILABLE_CODES = new Set(['57P03', '08001', '08004', '53300', 'ECONNREFUSED', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'EAI_AGAIN']);
const UNAVAILABLE_MESSAGES = /the database system is (starting up|shutting down|in recovery mode|not yet accepting connections)|timeout exceeded when trying to connect|connect ECONNREFUSED/i;

/**
 * The database is away for now (its connections were lost, or none can be made): the statement did
 * not fail on its own merits, and the same call may succeed once the server is back.
 */
export function isDatabaseUnavailable(err: unknown): boolean {
  if (isConnectionError(err)) return true;
  const e = err as { code?: unknown; message?: unknown; errors?: unknown } | undefined;
  if (!e) return false;
  if (typeof e.code === 'string' && UNAVAILABLE_CODES.has(e.code)) return true;
  if (typeof e.message === 'string' && UNAVAILABLE_MESSAGES.test(e.message)) return true;
  // Node's AggregateError of a connect to several addresses (localhost: ::1 and 127.0.0.1).
  return Array.isArray(e.errors) && e.errors.some((x) => isDatabaseUnavailable(x));
}

/**
 * Calls `fn` again with backoff (0.1 s doubling to 2 s) while it fails because the database is away,
 * until `deadlineMs` have passed; other errors, and the last one at the deadline, are thrown. For
 * Weft's own bookkeeping writes, which must not fail a run over a dropped connection: use it only on
 * calls that may safely run twice (a lost answer to a committed write means it did).
 */
export async function retryWhileUnavailable<T>(
  fn: () => Promise<T>,
  opts: { deadlineMs: number; signal?: AbortSignal; onRetry?: (err: unknown, attempt: number) => void },
): Promise<T> {
  const deadline = Date.now() + opts.deadlineMs;
  for (let attempt = 1; ; attempt++) {
    try {
      return await fn();
    } catch (err) {
      const delay = Math.min(2_000, 100 * 2 ** (attempt - 1));
      if (!isDatabaseUnavailable(err) || opts.signal?.aborted || Date.now() + delay > deadline) throw err;
      opts.onRetry?.(err, attempt);
      await new Promise((resolve) => setTimeout(resolve, delay));
    }
  }
}
