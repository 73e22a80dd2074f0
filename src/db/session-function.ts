import type { Database, Queryable } from './database.js';

/**
 * A hot statement that the embedded database runs as a PL/pgSQL function of its session (`pg_temp`),
 * created on first use. PGlite plans every statement it is sent (about 1.5 ms for a large data-modifying CTE,
 * most of such a statement's time), while PL/pgSQL keeps the plans of its statements for the session.
 * PostgreSQL, and a statement inside a transaction, run the SQL itself: a pool's connections would each
 * need their own function, and PostgreSQL plans these statements in well under a millisecond.
 */
export interface SessionStatement {
  /** The function's name (lowercase, underscores). */
  name: string;
  /** One query; `$1`, `$2`, ... are its arguments. */
  sql: string;
  /** The arguments' types, e.g. `jsonb, text`. */
  args: string;
  /** `TABLE (...)` (each column also a name of the query's result) or `SETOF <table>`. */
  returns: string;
}

const created = new WeakMap<Database, Map<string, Promise<void>>>();

const isDatabase = (q: Queryable): q is Database => typeof (q as Partial<Database>).mode === 'string';

export async function runStatement<T>(q: Queryable, s: SessionStatement, params: unknown[]): Promise<T[]> {
  if (!isDatabase(q) || q.mode !== 'pglite') return q.query<T>(s.sql, params);
  if (!/^[a-z_][a-z0-9_]*$/.test(s.name)) throw new Error(`bad session function name: ${s.name}`);
  const fns = created.get(q) ?? new Map<string, Promise<void>>();
  created.set(q, fns);
  let ready = fns.get(s.name);
  if (!ready) {
    ready = q.exec(`CREATE OR REPLACE FUNCTION pg_temp.${s.name}(${s.args}) RETURNS ${s.returns} LANGUAGE plpgsql AS $fn$
#variable_conflict use_column
BEGIN
  RETURN QUERY ${s.sql};
END
$fn$`);
    fns.set(s.name, ready);
    ready.catch(() => fns.delete(s.name));
  }
  await ready;
  // Bound, not written into the text: the call is a prepared statement of the database thread
  // (pglite-prepared.ts), so the outer SELECT is parsed and planned once too. Measured against arguments
  // written as literals over the simple protocol: 1.0 against 1.6 ms of CPU for one sync run's write, 0.5
  // against 0.6 ms for a charge release (bench/RESULTS.md, "session functions with bound arguments").
  const args = s.args.split(',').map((t, i) => `$${i + 1}::${t.trim()}`);
  return q.query<T>(`SELECT * FROM pg_temp.${s.name}(${args.join(', ')})`, params);
}
