import type { Queryable } from '../db/database.js';

/**
 * SQL that rewrites many rows of a table at once, the caller holding the table's lock: a column change over every
 * row (rename or remove a key of the row data, read a column's values in slices and write the converted ones;
 * tables/column-service.ts) and placing a row among others (the rows after it move on). Every statement is scoped
 * by table id.
 */

// ------------------------------------------------------------------------------------------------
// Placing a row among others
// ------------------------------------------------------------------------------------------------

/** A row's position in its table, or undefined when the table holds no such row. */
export async function rowPosition(q: Queryable, tableId: string, rowId: string): Promise<number | undefined> {
  const rows = await q.query<{ position: number }>('SELECT position FROM table_rows WHERE table_id = $1 AND id = $2', [tableId, rowId]);
  return rows[0] === undefined ? undefined : Number(rows[0].position);
}

/**
 * Makes `position` free for a row, moving the row there and every row after it one place on, when a row holds
 * it; says whether rows moved. The unique index on (table_id, position) is checked row by row as one statement
 * moves them, so a move by one would meet a row not yet moved: they go to negative positions first, then back.
 */
export async function openPosition(q: Queryable, tableId: string, position: number): Promise<boolean> {
  const taken = await q.query('SELECT 1 FROM table_rows WHERE table_id = $1 AND position = $2', [tableId, position]);
  if (taken.length === 0) return false;
  await q.query('UPDATE table_rows SET position = -position - 1 WHERE table_id = $1 AND position >= $2', [tableId, position]);
  await q.query('UPDATE table_rows SET position = -position WHERE table_id = $1 AND position < 0', [tableId]);
  return true;
}

// ------------------------------------------------------------------------------------------------
// Column changes over every row
// ------------------------------------------------------------------------------------------------
/** What rewriting rows did: rows written, bytes added (negative when they shrank), the largest row written. */
export interface RowRewrite {
  rows: number;
  bytesAdded: number;
  maxBytes: number;
}

const REWRITE_TOTALS = 'SELECT count(*)::int AS rows, COALESCE(sum(delta), 0)::bigint AS added, COALESCE(max(bytes), 0)::int AS max FROM u';

function rewriteOf(r: { rows: number; added: number | string; max: number } | undefined): RowRewrite {
  return { rows: r?.rows ?? 0, bytesAdded: Number(r?.added ?? 0), maxBytes: r?.max ?? 0 };
}

/**
 * Rewrites the data of every row holding `key`, in one statement: `newData` is an expression of `r.data`. Row
 * timestamps stay: a schema change is the table's (its updatedAt), not a write of the rows.
 */
async function rewriteRowsWithKey(q: Queryable, tableId: string, key: string, newData: string, params: unknown[]): Promise<RowRewrite> {
  const rows = await q.query<{ rows: number; added: number | string; max: number }>(
    `WITH old AS (SELECT id, bytes FROM table_rows WHERE table_id = $1 AND data ? $2::text),
     u AS (UPDATE table_rows r SET data = ${newData} FROM old WHERE r.table_id = $1 AND r.id = old.id
           RETURNING r.bytes, r.bytes - old.bytes AS delta)
     ${REWRITE_TOTALS}`,
    [tableId, key, ...params],
  );
  return rewriteOf(rows[0]);
}

/** Renames a key of row data in every row holding it. */
export function renameKey(q: Queryable, tableId: string, from: string, to: string): Promise<RowRewrite> {
  return rewriteRowsWithKey(q, tableId, from, '(r.data - $2::text) || jsonb_build_object($3::text, r.data->$2::text)', [to]);
}

/** Removes a key from every row holding it. */
export function removeKey(q: Queryable, tableId: string, key: string): Promise<RowRewrite> {
  return rewriteRowsWithKey(q, tableId, key, 'r.data - $2::text', []);
}

/** Rows of a table without a value for `key` (null values are not stored). */
export async function countRowsWithout(q: Queryable, tableId: string, key: string): Promise<number> {
  const rows = await q.query<{ n: number }>('SELECT count(*)::int AS n FROM table_rows WHERE table_id = $1 AND NOT (data ? $2::text)', [tableId, key]);
  return rows[0].n;
}

/**
 * The values of `key` in the next rows in table order after `afterPosition`: at most `limit` rows, taken while
 * the rows before them hold less than `maxBytes` (so at least one; counted by their stored size, so a row's data
 * is read only once it is taken). `v`
 * is null for a row without a value, and for one whose value is of JSON type `skipJsonType` when given; `last`
 * is the position the next slice starts after, undefined when no rows follow.
 */
export async function columnValues(
  q: Queryable, tableId: string, key: string, afterPosition: number, limit: number, maxBytes: number, skipJsonType?: string,
): Promise<{ values: { id: string; v: unknown }[]; last?: number }> {
  const value = skipJsonType ? 'CASE WHEN jsonb_typeof(r.data->$2::text) = $6 THEN NULL ELSE r.data->$2::text END' : 'r.data->$2::text';
  const rows = await q.query<{ id: string; position: number | string; v: unknown }>(
    `WITH page AS (
       SELECT id, position, sum(bytes) OVER (ORDER BY position ROWS UNBOUNDED PRECEDING) - bytes AS before
         FROM (SELECT id, position, bytes FROM table_rows WHERE table_id = $1 AND position > $3::bigint ORDER BY position LIMIT $4) p
     )
     SELECT r.id, r.position, ${value} AS v
       FROM page JOIN table_rows r ON r.id = page.id
      WHERE r.table_id = $1 AND page.before < $5::bigint
      ORDER BY r.position`,
    [tableId, key, afterPosition, limit, maxBytes, ...(skipJsonType ? [skipJsonType] : [])],
  );
  return {
    values: rows.filter((r) => r.v !== null && r.v !== undefined).map((r) => ({ id: r.id, v: r.v })),
    last: rows.length > 0 ? Number(rows[rows.length - 1].position) : undefined,
  };
}

/**
 * Sets `key` of each listed row to its value; a null value removes the key (null values are not stored). The ids go as an array too (see mergeById);
 * the update then finds each row by its id alone, one index lookup a row (also matching the array there made
 * every lookup walk the whole array).
 */
export async function setColumnValues(q: Queryable, tableId: string, key: string, values: { id: string; v: unknown }[]): Promise<RowRewrite> {
  if (values.length === 0) return { rows: 0, bytesAdded: 0, maxBytes: 0 };
  const rows = await q.query<{ rows: number; added: number | string; max: number }>(
    `WITH p AS (SELECT * FROM jsonb_to_recordset($3::jsonb) AS x(id text, v jsonb)),
     old AS (SELECT r.id, r.bytes, p.v FROM table_rows r JOIN p ON p.id = r.id WHERE r.table_id = $1 AND r.id = ANY($4::text[])),
     u AS (UPDATE table_rows r SET data = CASE WHEN old.v IS NULL OR old.v = 'null'::jsonb THEN r.data - $2::text ELSE jsonb_set(r.data, ARRAY[$2::text], old.v) END
             FROM old WHERE r.id = old.id AND r.table_id = $1
           RETURNING r.bytes, r.bytes - old.bytes AS delta)
     ${REWRITE_TOTALS}`,
    [tableId, key, JSON.stringify(values), values.map((x) => x.id)],
  );
  return rewriteOf(rows[0]);
}
