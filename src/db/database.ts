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
  /** Resolves when the database answers. */
  ping(): Promise<void>;
  /** Final; calling it again resolves; queries afterwards reject. */
  close(): Promise<void>;
  /** Connections in use and waiting, for metrics (PGlite: its one connection, and the calls queued behind it). */
  poolStats?(): { total: number; idle: number; waiting: number };
}

/** A unique-violation (23505) from either driver, with the constraint name when known. */
export function uniqueViolation(err: unknown): { constraint?: string } | undefined {
  const e = err as { code?: string; constraint?: string } | undefined;
  return e?.code === '23505' ? { constraint: e.constraint } : undefined;
}
