import type { Database } from './database.js';

/**
 * A statement run as a PL/pgSQL function of the database session (`pg_temp`), created on first use. PGlite
 * plans every statement it is sent (about 1.5 ms for a large data-modifying CTE, most of such a statement's
 * time), while PL/pgSQL keeps the plans of its statements for the session. Only for a database of one
 * session (the embedded one): each connection of a pool would need its own.
 *
 * `body` is one query whose `$1`, `$2`, ... are the function's arguments (`args`, e.g. `jsonb`); `returns` is
 * a `TABLE (...)` column list, each column also a name of the query's result.
 */
export function sessionFunction<T>(db: Database, name: string, args: string, returns: string, body: string): (params: unknown[]) => Promise<T[]> {
  if (db.mode !== 'pglite') throw new Error('session functions need a single-session database');
  if (!/^[a-z_][a-z0-9_]*$/.test(name)) throw new Error(`bad session function name: ${name}`);
  const create = `CREATE OR REPLACE FUNCTION pg_temp.${name}(${args}) RETURNS ${returns} LANGUAGE plpgsql AS $fn$
#variable_conflict use_column
BEGIN
  RETURN QUERY ${body};
END
$fn$`;
  const placeholders = args.split(',').map((_, i) => `$${i + 1}`).join(', ');
  const call = `SELECT * FROM pg_temp.${name}(${placeholders})`;
  let created: Promise<void> | undefined;
  return async (params) => {
    created ??= db.exec(create).catch((err: unknown) => {
      created = undefined;
      throw err;
    });
    await created;
    return db.query<T>(call, params);
  };
}
