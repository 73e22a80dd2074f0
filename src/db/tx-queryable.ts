import type { Queryable } from './database.js';

/**
 * The Queryable handed to a transaction's fn. It remembers the first failed statement: PostgreSQL
 * aborts the transaction there, and a COMMIT after it silently rolls back, so the adapters reject
 * the transaction with that error even when fn caught it.
 */
export function txQueryable(run: (text: string, params?: unknown[]) => Promise<{ rows: unknown[] }>, exec: (text: string) => Promise<unknown>): { q: Queryable; failure: () => unknown } {
  let failed: { err: unknown } | undefined;
  const note = (err: unknown): never => {
    failed ??= { err };
    throw err;
  };
  return {
    q: {
      async query<T>(text: string, params?: readonly unknown[]) {
        const r = await run(text, params ? [...params] : undefined).catch(note);
        return r.rows as T[];
      },
      async exec(text: string) {
        await exec(text).catch(note);
      },
    },
    failure: () => failed?.err,
  };
}

