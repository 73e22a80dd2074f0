import { createHash } from 'node:crypto';
import type { Queryable } from '../db/database.js';
import { lockWorkspace } from '../db/workspace-lock.js';
import { type Column, isNumeric } from './columns.js';
import { typedExpression, uniqueExpression } from './column-sql.js';
import { type SortKey, orderBySql } from './filter-sql.js';
import { TABLE_LIMITS } from './limits.js';
import { withColumnIds } from './stored-columns.js';

/** SQL of the Tables capability. Every query is scoped by table id, and table lookups by workspace. */

/** A column as the store answers it: always with its id. */
export type IdentifiedColumn = Column & { id: string };
export { derivedColumnId } from './stored-columns.js';

export interface TableRow {
  id: string;
  workspace_id: string;
  name: string;
  description: string;
  columns: IdentifiedColumn[];
  schema_version: number;
  row_count: number;
  max_rows: number;
  bytes: number;
  locked: string[];
  created_at: Date;
  updated_at: Date;
}

export interface RowRecord {
  id: string;
  data: Record<string, unknown>;
  position: number;
  created_at: Date;
  updated_at: Date;
}

const TABLE_ID = /^tbl_[0-9a-f]{32}$/;
export const isTableId = (id: string): boolean => TABLE_ID.test(id);
export const isRowId = (id: string): boolean => /^row_[0-9a-f]{32}$/.test(id);

const TABLE_COLUMNS = 'id, workspace_id, name, description, columns, schema_version, row_count, max_rows, bytes, locked, created_at, updated_at';
const ROW_COLUMNS = 'r.id, r.data, r.position, r.created_at, r.updated_at';
const NOW_MS = "date_trunc('milliseconds', now())";

// ------------------------------------------------------------------------------------------------
// Tables
// ------------------------------------------------------------------------------------------------

export async function findTable(q: Queryable, workspaceId: string, tableId: string, lock = false): Promise<TableRow | undefined> {
  if (!isTableId(tableId)) return undefined;
  const rows = await q.query<TableRow>(
    `SELECT ${TABLE_COLUMNS} FROM tables WHERE id = $1 AND workspace_id = $2${lock ? ' FOR UPDATE' : ''}`,
    [tableId, workspaceId],
  );
  return rows[0] && withColumnIds(rows[0]);
}

export async function findTableByName(q: Queryable, workspaceId: string, name: string): Promise<TableRow | undefined> {
  const rows = await q.query<TableRow>(`SELECT ${TABLE_COLUMNS} FROM tables WHERE workspace_id = $1 AND name = $2`, [workspaceId, name]);
  return rows[0] && withColumnIds(rows[0]);
}

export async function listTables(q: Queryable, workspaceId: string): Promise<TableRow[]> {
  return (await q.query<TableRow>(`SELECT ${TABLE_COLUMNS} FROM tables WHERE workspace_id = $1 ORDER BY created_at, id`, [workspaceId])).map(withColumnIds);
}

/** Serializes table creation within a workspace (the per-plan table cap) until the transaction ends. */
export function lockWorkspaceTables(q: Queryable, workspaceId: string): Promise<void> {
  return lockWorkspace(q, 'tables', workspaceId);
}

export async function countTables(q: Queryable, workspaceId: string): Promise<number> {
  const rows = await q.query<{ n: number }>('SELECT count(*)::int AS n FROM tables WHERE workspace_id = $1', [workspaceId]);
  return rows[0].n;
}

export async function insertTable(
  q: Queryable,
  t: { id: string; workspaceId: string; name: string; description: string; columns: Column[]; maxRows: number; createdBy: string | null },
): Promise<TableRow> {
  const rows = await q.query<TableRow>(
    `INSERT INTO tables (id, workspace_id, name, description, columns, max_rows, created_by)
     VALUES ($1, $2, $3, $4, $5::jsonb, $6, $7) RETURNING ${TABLE_COLUMNS}`,
    [t.id, t.workspaceId, t.name, t.description, JSON.stringify(t.columns), t.maxRows, t.createdBy],
  );
  return withColumnIds(rows[0]);
}

/** Stores a table's columns (ids included) as its new schema: bumps its schema version and updatedAt. */
export async function setColumns(q: Queryable, tableId: string, columns: IdentifiedColumn[]): Promise<TableRow> {
  const rows = await q.query<TableRow>(
    `UPDATE tables SET columns = $2::jsonb, schema_version = schema_version + 1, updated_at = date_trunc('milliseconds', clock_timestamp())
      WHERE id = $1 RETURNING ${TABLE_COLUMNS}`,
    [tableId, JSON.stringify(columns)],
  );
  return withColumnIds(rows[0]);
}

export async function deleteTable(q: Queryable, tableId: string): Promise<void> {
  await q.query('DELETE FROM table_rows WHERE table_id = $1', [tableId]);
  await q.query('DELETE FROM tables WHERE id = $1', [tableId]);
}

/** Sets every table of a workspace to a plan's rows-per-table limit (after a plan change). */
export async function setMaxRows(q: Queryable, workspaceId: string, maxRows: number): Promise<void> {
  await q.query('UPDATE tables SET max_rows = $2 WHERE workspace_id = $1', [workspaceId, maxRows]);
}

/** Bytes of row data in a workspace's tables (`$1`: the workspace id). */
export const WORKSPACE_BYTES_SQL = 'SELECT COALESCE(sum(bytes), 0) FROM tables WHERE workspace_id = $1';

// ------------------------------------------------------------------------------------------------
// Per-table indexes (DDL). Table ids are generated by us and checked against TABLE_ID before use;
// column names match NAME_PATTERN (checked again in filter-sql's nameLiteral).
// ------------------------------------------------------------------------------------------------

function tableHex(tableId: string): string {
  if (!isTableId(tableId)) throw new Error(`invalid table id ${tableId}`);
  return tableId.slice(4);
}

const columnHash = (name: string) => createHash('sha256').update(name).digest('hex').slice(0, 8);

/** Name of the unique index of a column. */
export const uniqueIndexName = (tableId: string, column: string) => `t${tableHex(tableId)}_u_${columnHash(column)}`;
const typedIndexName = (tableId: string, column: string) => `t${tableHex(tableId)}_x_${columnHash(column)}`;
const TYPED_INDEX = /^t[0-9a-f]{32}_x_[0-9a-f]{8}$/;

export interface IndexSpec {
  name: string;
  /** The CREATE statement: equal specs are the same index. */
  sql: string;
}

/**
 * The indexes a column calls for, named after the table and the column's name and built on expressions of its
 * name: unique (enforces `unique`), typed (ranges and sorts on numbers and dates; a unique date column's
 * unique index serves those already).
 */
export function columnIndexes(tableId: string, column: Column): { unique?: IndexSpec; typed?: IndexSpec } {
  const where = `WHERE table_id = '${tableId}'`;
  tableHex(tableId);
  const specs: { unique?: IndexSpec; typed?: IndexSpec } = {};
  if (column.unique) {
    const name = uniqueIndexName(tableId, column.name);
    specs.unique = { name, sql: `CREATE UNIQUE INDEX ${name} ON table_rows (${uniqueExpression(column)}) ${where}` };
  }
  const typedSameAsUnique = column.unique && column.type === 'date';
  if ((isNumeric(column.type) || column.type === 'date') && !typedSameAsUnique) {
    const name = typedIndexName(tableId, column.name);
    specs.typed = { name, sql: `CREATE INDEX ${name} ON table_rows (${typedExpression(column)}) ${where}` };
  }
  return specs;
}

/** Names of the per-column indexes a table has. */
export async function tableIndexNames(q: Queryable, tableId: string): Promise<Set<string>> {
  const rows = await q.query<{ indexname: string }>(
    "SELECT indexname FROM pg_indexes WHERE tablename = 'table_rows' AND indexname LIKE $1",
    [`t${tableHex(tableId)}\\_%`],
  );
  return new Set(rows.map((r) => r.indexname).filter((n) => /^t[0-9a-f]{32}_[ux]_[0-9a-f]{8}$/.test(n)));
}

/**
 * Creates an index of a column unless `existing` (the table's index names, kept up to date here) has it. A typed
 * index is skipped once the table has TABLE_LIMITS.maxTypedIndexes of them (see there); a unique one never is.
 */
export async function createIndex(q: Queryable, spec: IndexSpec, kind: 'unique' | 'typed', existing: Set<string>): Promise<void> {
  if (existing.has(spec.name)) return;
  if (kind === 'typed' && [...existing].filter((n) => TYPED_INDEX.test(n)).length >= TABLE_LIMITS.maxTypedIndexes) return;
  await q.exec(spec.sql);
  existing.add(spec.name);
}

export async function dropIndex(q: Queryable, name: string, existing: Set<string>): Promise<void> {
  if (!existing.has(name)) return;
  if (!/^t[0-9a-f]{32}_[ux]_[0-9a-f]{8}$/.test(name)) throw new Error(`unexpected index name ${name}`);
  await q.exec(`DROP INDEX IF EXISTS ${name}`);
  existing.delete(name);
}

/** Creates the indexes a column calls for (see columnIndexes and createIndex). */
export async function createColumnIndexes(q: Queryable, tableId: string, column: Column, existing: Set<string>): Promise<void> {
  const specs = columnIndexes(tableId, column);
  if (specs.unique) await createIndex(q, specs.unique, 'unique', existing);
  if (specs.typed) await createIndex(q, specs.typed, 'typed', existing);
}

/** Drops the indexes of a column as it was defined (those it has). */
export async function dropColumnIndexes(q: Queryable, tableId: string, column: Column, existing: Set<string>): Promise<void> {
  const specs = columnIndexes(tableId, column);
  if (specs.unique) await dropIndex(q, specs.unique.name, existing);
  if (specs.typed) await dropIndex(q, specs.typed.name, existing);
}

export async function dropTableIndexes(q: Queryable, tableId: string): Promise<void> {
  const prefix = `t${tableHex(tableId)}\\_%`;
  const rows = await q.query<{ indexname: string }>(
    "SELECT indexname FROM pg_indexes WHERE tablename = 'table_rows' AND indexname LIKE $1",
    [prefix],
  );
  for (const r of rows) {
    if (!/^t[0-9a-f]{32}_[ux]_[0-9a-f]{8}$/.test(r.indexname)) continue;
    await q.exec(`DROP INDEX IF EXISTS ${r.indexname}`);
  }
}

// ------------------------------------------------------------------------------------------------
// Rows
// ------------------------------------------------------------------------------------------------

export interface TableLock {
  schema_version: number;
  row_count: number;
  max_rows: number;
  /** Position of the next inserted row; the writer holding the lock inserts from it and moves it on. */
  next_position: number;
  locked: string[];
}

/** Locks the table row (all row writes of a table serialize on it) and returns its counters. */
export async function lockTable(q: Queryable, tableId: string, workspaceId: string): Promise<TableLock | undefined> {
  const rows = await q.query<TableLock>(
    'SELECT schema_version, row_count, max_rows, next_position, locked FROM tables WHERE id = $1 AND workspace_id = $2 FOR UPDATE',
    [tableId, workspaceId],
  );
  const r = rows[0];
  return r ? { ...r, next_position: Number(r.next_position) } : undefined;
}

/** Applies a write's changes to the locked table's counters: rows, bytes and positions handed out. */
export async function adjustCounters(q: Queryable, tableId: string, rowDelta: number, bytesDelta: number, positionsUsed = 0): Promise<void> {
  if (rowDelta === 0 && bytesDelta === 0 && positionsUsed === 0) return;
  await q.query(
    `UPDATE tables SET row_count = row_count + $2::int, bytes = bytes + $3::bigint, next_position = next_position + $4::bigint
      WHERE id = $1`,
    [tableId, rowDelta, bytesDelta, positionsUsed],
  );
}

export interface WrittenRow extends RowRecord {
  bytes: number;
  old_bytes?: number;
}

/**
 * Inserts rows at consecutive positions from `first`. `payload` is JSON text of [{id, data}].
 * The data is not sent back (the caller has it): row i of the payload is at position first + i.
 */
export async function insertRows(q: Queryable, tableId: string, first: number, payload: string): Promise<Omit<WrittenRow, 'data'>[]> {
  return q.query<Omit<WrittenRow, 'data'>>(
    `INSERT INTO table_rows AS r (id, table_id, data, position)
     SELECT e.value->>'id', $1, e.value->'data', $2::bigint + e.ord - 1
       FROM jsonb_array_elements($3::jsonb) WITH ORDINALITY AS e(value, ord)
     RETURNING r.id, r.position, r.created_at, r.updated_at, r.bytes`,
    [tableId, first, payload],
  );
}

/**
 * A compiled filter as the statements below take it: `where` over the rows of `from` (alias `r`, and `d`
 * when it reads each row's data once: see `rowsFrom`), with its parameters; params[0] is the table id.
 */
export interface RowFilter {
  from: string;
  where: string;
  params: unknown[];
  /** The alias user columns are read through in `from` (`d` when the data is read once). */
  dataAlias: 'r' | 'd';
}

/**
 * The rows a filter runs on. With `readDataOnce`, each row's data is fetched and decompressed once into
 * `d.data` (`||` with an empty object returns its operand detoasted, and OFFSET 0 keeps the planner from
 * folding it back into each read), so a filter reading it many times costs one read of the row, not one
 * a condition. It costs the filter the rows' indexes, so it is for filters that read the data often.
 */
export function rowsFrom(readDataOnce: boolean): string {
  return readDataOnce ? `table_rows r CROSS JOIN LATERAL (SELECT r.data || '{}'::jsonb AS data OFFSET 0) d` : 'table_rows r';
}

/** Rows matching `filter`. */
export async function selectRows(
  q: Queryable,
  filter: RowFilter,
  orderBy: string,
  limit: number,
  offset: number,
): Promise<RowRecord[]> {
  const { from, where, params } = filter;
  const n = params.length;
  return q.query<RowRecord>(
    `SELECT ${ROW_COLUMNS} FROM ${from} WHERE r.table_id = $1 AND ${where}
      ORDER BY ${orderBy} LIMIT $${n + 1} OFFSET $${n + 2}`,
    [...params, limit, offset],
  );
}

/** A row of a byte-capped page: `data` is null for the rows past the page's byte budget. */
export interface PageRow extends Omit<RowRecord, 'data'> {
  data: Record<string, unknown> | null;
}

/**
 * Like selectRows, but the database sends the data of a row only while the page's running total of
 * row bytes (in page order) stays within `maxBytes`, and always for the first row; the rows past it
 * come back with `data` null (ids and positions only), so the caller knows the page was cut short.
 * The inner query is the plain page (ORDER BY ... LIMIT, so a bounded sort or an index walk); it
 * projects its sort keys, so the running total re-sorts only the page's rows, in the same total order
 * (the last key is the position, unique in a table).
 */
export async function selectPage(
  q: Queryable,
  filter: RowFilter,
  keys: SortKey[],
  limit: number,
  offset: number,
  maxBytes: number,
): Promise<PageRow[]> {
  const { from, where, params } = filter;
  const n = params.length;
  const orderBy = orderBySql(keys);
  const projected = keys.map((k, i) => `${k.expr} AS k${i}`).join(', ');
  const pageOrder = keys.map((k, i) => `p.k${i} ${k.order}`).join(', ');
  return q.query<PageRow>(
    `SELECT p.id, CASE WHEN sum(p.bytes) OVER w <= $${n + 3}::bigint OR row_number() OVER w = 1 THEN p.data END AS data,
            p.position, p.created_at, p.updated_at
       FROM (
         SELECT ${ROW_COLUMNS}, r.bytes, ${projected}
           FROM ${from} WHERE r.table_id = $1 AND ${where}
          ORDER BY ${orderBy} LIMIT $${n + 1} OFFSET $${n + 2}
       ) p
     WINDOW w AS (ORDER BY ${pageOrder} ROWS UNBOUNDED PRECEDING)
     ORDER BY ${pageOrder}`,
    [...params, limit, offset, maxBytes],
  );
}

export async function countRows(q: Queryable, filter: RowFilter): Promise<number> {
  const { from, where, params } = filter;
  const rows = await q.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${from} WHERE r.table_id = $1 AND ${where}`, params);
  return rows[0].n;
}

export async function findRow(q: Queryable, tableId: string, rowId: string): Promise<RowRecord | undefined> {
  const rows = await q.query<RowRecord>(`SELECT ${ROW_COLUMNS} FROM table_rows r WHERE r.table_id = $1 AND r.id = $2`, [tableId, rowId]);
  return rows[0];
}

/**
 * Merges one patch into every row matching `filter`, optionally only the first `limit` rows in table
 * order. Returns the written rows with their old sizes.
 */
export async function mergeIntoMatching(
  q: Queryable,
  filter: RowFilter,
  set: Record<string, unknown>,
  unset: string[],
  limit: number | undefined,
): Promise<WrittenRow[]> {
  const { from, where, params } = filter;
  const n = params.length;
  return q.query<WrittenRow>(
    `WITH target AS (
       SELECT r.id, r.bytes FROM ${from} WHERE r.table_id = $1 AND ${where}
        ORDER BY r.position ${limit !== undefined ? `LIMIT $${n + 3}` : ''} FOR UPDATE OF r
     )
     UPDATE table_rows r SET data = (r.data || $${n + 1}::jsonb) - $${n + 2}::text[], updated_at = ${NOW_MS}
       FROM target WHERE r.id = target.id
     RETURNING ${ROW_COLUMNS}, r.bytes, target.bytes AS old_bytes`,
    [...params, JSON.stringify(set), unset, ...(limit !== undefined ? [limit] : [])],
  );
}

/**
 * Merges a different patch into each listed row (`s` set, `u` unset). The ids also go as an array: against the
 * 100 rows the planner assumes for a JSON record set, it scanned the whole of `table_rows` twice per update
 * while it held a few thousand rows (the same plan as the statement that ends runs, see runs/store.ts
 * `finishRuns`); an array's length is known, which keeps each row an index lookup.
 */
export async function mergeById(q: Queryable, tableId: string, patches: readonly { id: string; s: Record<string, unknown>; u: readonly string[] }[]): Promise<WrittenRow[]> {
  return q.query<WrittenRow>(
    `WITH p AS (SELECT * FROM jsonb_to_recordset($2::jsonb) AS x(id text, s jsonb, u text[])),
     target AS (SELECT r.id, r.bytes FROM table_rows r JOIN p ON p.id = r.id
                 WHERE r.table_id = $1 AND r.id = ANY($3::text[]) FOR UPDATE OF r)
     UPDATE table_rows r SET data = (r.data || p.s) - p.u, updated_at = ${NOW_MS}
       FROM p, target WHERE r.id = ANY($3::text[]) AND r.id = p.id AND target.id = p.id
     RETURNING ${ROW_COLUMNS}, r.bytes, target.bytes AS old_bytes`,
    [tableId, JSON.stringify(patches), patches.map((p) => p.id)],
  );
}

/** Replaces a row's data entirely (upsert). */
export async function replaceRow(q: Queryable, tableId: string, rowId: string, data: Record<string, unknown>): Promise<WrittenRow | undefined> {
  const rows = await q.query<WrittenRow>(
    `WITH target AS (SELECT r.id, r.bytes FROM table_rows r WHERE r.table_id = $1 AND r.id = $2 FOR UPDATE)
     UPDATE table_rows r SET data = $3::jsonb, updated_at = ${NOW_MS} FROM target WHERE r.id = target.id
     RETURNING ${ROW_COLUMNS}, r.bytes, target.bytes AS old_bytes`,
    [tableId, rowId, JSON.stringify(data)],
  );
  return rows[0];
}

/** The row whose unique column holds `value` (already coerced), through the column's unique index. */
export async function findByUnique(q: Queryable, tableId: string, column: Column, value: unknown): Promise<{ id: string } | undefined> {
  const rhs = column.type === 'date' ? 'weft_table_ts($2::text)' : '$2::jsonb';
  const rows = await q.query<{ id: string }>(
    `SELECT r.id FROM table_rows r WHERE r.table_id = $1 AND ${uniqueExpression(column, 'r')} = ${rhs}`,
    [tableId, column.type === 'date' ? value : JSON.stringify(value)],
  );
  return rows[0];
}

export async function deleteByIds(q: Queryable, tableId: string, ids: string[]): Promise<{ id: string; position: number; bytes: number }[]> {
  return q.query<{ id: string; position: number; bytes: number }>(
    'DELETE FROM table_rows r WHERE r.table_id = $1 AND r.id = ANY($2::text[]) RETURNING r.id, r.position, r.bytes',
    [tableId, ids],
  );
}

export async function deleteMatching(
  q: Queryable,
  filter: RowFilter,
  limit: number | undefined,
): Promise<{ id: string; position: number; bytes: number }[]> {
  const { from, where, params } = filter;
  const n = params.length;
  return q.query<{ id: string; position: number; bytes: number }>(
    `WITH target AS (
       SELECT r.id FROM ${from} WHERE r.table_id = $1 AND ${where}
        ORDER BY r.position ${limit !== undefined ? `LIMIT $${n + 1}` : ''} FOR UPDATE OF r
     )
     DELETE FROM table_rows r USING target WHERE r.id = target.id RETURNING r.id, r.position, r.bytes`,
    [...params, ...(limit !== undefined ? [limit] : [])],
  );
}
