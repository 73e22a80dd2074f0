import type { Database, Queryable } from '../../src/db/database.js';

/**
 * Makes the statements `refuse` picks fail inside the server's transactions while `during` runs, then puts the
 * database back: a write that must commit whole is shown to leave nothing behind when one of its statements fails.
 */
export async function withFailingStatements<T>(
  db: Database, refuse: (text: string, params?: readonly unknown[]) => boolean, during: () => Promise<T>,
): Promise<T> {
  const originalTx = db.tx;
  db.tx = function <R>(this: Database, fn: (q: Queryable) => Promise<R>) {
    return originalTx.call(db, (q) => fn({
      exec: (text) => q.exec(text),
      query: (text, params) => (refuse(text, params) ? Promise.reject(new Error('statement refused (injected)')) : q.query(text, params)) as never,
    }));
  } as Database['tx'];
  try {
    return await during();
  } finally {
    db.tx = originalTx;
  }
}
