/** The storage port every area's store uses: parameterized SQL and short transactions. */
export interface Queryable {
  query<T = Record<string, unknown>>(text: string, params?: readonly unknown[]): Promise<T[]>;
  /** Runs several statements without parameters (migrations). */
  exec(text: string): Promise<void>;
}

export interface Database extends Queryable {
  readonly mode: 'pglite' | 'postgres';
  /**
   * Runs `fn` in one transaction. Keep it to database calls only: on PGlite every other
   * query waits while a transaction is open.
   */
  tx<T>(fn: (q: Queryable) => Promise<T>): Promise<T>;
  ping(): Promise<void>;
  close(): Promise<void>;
}

/** A unique-violation (23505) from either driver, with the constraint name when known. */
export function uniqueViolation(err: unknown): { constraint?: string } | undefined {
  const e = err as { code?: string; constraint?: string } | undefined;
  return e?.code === '23505' ? { constraint: e.constraint } : undefined;
}
