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
  const types = s.args.split(',').map((t) => t.trim());
  const literals = params.map(sqlLiteral);
  // Arguments written into the text as literals run over the simple protocol, one call into PGlite
  // instead of three (measured on the AI settlement: 303 us against 346 to 425 us).
  if (literals.every((l): l is string => l !== undefined)) {
    return q.query<T>(`SELECT * FROM pg_temp.${s.name}(${literals.map((l, i) => `${l}::${types[i]}`).join(', ')})`);
  }
  return q.query<T>(`SELECT * FROM pg_temp.${s.name}(${types.map((_, i) => `$${i + 1}`).join(', ')})`, params);
}

/**
 * A parameter as an SQL literal, or undefined for a kind this does not write (the call then binds it):
 * null, strings, finite numbers, booleans and arrays of strings.
 * Strings are quoted with doubled single quotes, which is complete under standard_conforming_strings
 * (on by default since PostgreSQL 9.1; the embedded database refuses to open with it off, connect.ts).
 */
function sqlLiteral(v: unknown): string | undefined {
  if (v === null || v === undefined) return 'NULL';
  if (typeof v === 'string') return v.includes('\0') ? undefined : `'${v.replaceAll("'", "''")}'`;
  if (typeof v === 'number') return Number.isFinite(v) ? String(v) : undefined;
  if (typeof v === 'boolean') return v ? 'true' : 'false';
  // An array of strings (text[]): ARRAY['a', 'b'], or '{}' when empty (ARRAY[] needs a type).
  if (Array.isArray(v) && v.every((x) => typeof x === 'string')) {
    const items = v.map(sqlLiteral);
    if (items.some((x) => x === undefined)) return undefined;
    return items.length === 0 ? `'{}'` : `ARRAY[${items.join(', ')}]`;
  }
  return undefined;
}
