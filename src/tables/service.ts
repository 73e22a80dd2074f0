import { recordAudit } from '../audit/store.js';
import type { Database, Queryable } from '../db/database.js';
import { HttpError } from '../http/errors.js';
import { storageQuota } from '../limits/storage.js';
import { newHexId } from '../ids.js';
import type { TablesPort } from '../engine/blocks/table.js';
import {
  type Column, type ColumnInput, type RowIssue, columnMap, dateInstant, normalizeColumn, normalizeColumns, prepareRow, rowIssuesError,
} from './columns.js';
import { SqlParams, compileFilter, compileSort } from './filter-sql.js';
import { NAME_PATTERN, TABLE_LIMITS, tablePlanLimits } from './limits.js';
import * as store from './store.js';
import type { RowRecord, TableRow, WrittenRow } from './store.js';

/** Business logic of the Tables capability. Every function is scoped to one workspace. */

export type { Column, ColumnInput } from './columns.js';

export interface PublicColumn {
  name: string;
  type: Column['type'];
  required: boolean;
  unique: boolean;
  options?: string[];
}

export interface PublicTable {
  id: string;
  name: string;
  description: string;
  schema: { columns: PublicColumn[] };
  rowCount: number;
  maxRows: number;
  createdAt: string;
  updatedAt: string;
}

export interface PublicRow {
  id: string;
  data: Record<string, unknown>;
  position: number;
  createdAt: string;
  updatedAt: string;
}

export interface Actor {
  userId?: string | null;
  keyId?: string | null;
}

type Data = Record<string, unknown>;
export type Filter = Record<string, unknown>;
export type Sort = Record<string, unknown>;

export const publicColumn = (c: Column): PublicColumn => ({
  name: c.name,
  type: c.type,
  required: c.required === true,
  unique: c.unique === true,
  ...(c.options ? { options: c.options } : {}),
});

export const publicTable = (t: TableRow): PublicTable => ({
  id: t.id,
  name: t.name,
  description: t.description,
  schema: { columns: t.columns.map(publicColumn) },
  rowCount: t.row_count,
  maxRows: t.max_rows,
  createdAt: t.created_at.toISOString(),
  updatedAt: t.updated_at.toISOString(),
});

/** Row data with its keys in the table's column order (jsonb stores them in its own order). */
function ordered(data: Data, columns: Column[] | undefined): Data {
  if (!columns) return data;
  const out: Data = {};
  for (const c of columns) if (Object.hasOwn(data, c.name)) out[c.name] = data[c.name];
  for (const k of Object.keys(data)) if (!Object.hasOwn(out, k)) out[k] = data[k];
  return out;
}

export const publicRow = (r: RowRecord, columns?: Column[]): PublicRow => ({
  id: r.id,
  data: ordered(r.data, columns),
  position: Number(r.position),
  createdAt: r.created_at.toISOString(),
  updatedAt: r.updated_at.toISOString(),
});

const tableNotFound = () => new HttpError(404, 'Table not found');
const rowNotFound = () => new HttpError(404, 'Row not found');

/** The schema changed between validation and write: validate again against the new one. */
class SchemaChanged extends Error {}

// ------------------------------------------------------------------------------------------------
// Database errors
// ------------------------------------------------------------------------------------------------

interface PgError { code?: string; constraint?: string; detail?: string; message?: string }

function parseConflictValue(detail: string | undefined): unknown {
  const m = detail ? /\)=\((.*)\) already exists\.?$/s.exec(detail) : null;
  if (!m) return undefined;
  try {
    return JSON.parse(m[1]);
  } catch {
    return m[1];
  }
}

/** Maps a database error of a row write to the HTTP error it stands for, or returns it unchanged. */
function mapWriteError(err: unknown, columns: Column[], written: Data[] = []): unknown {
  if (err instanceof HttpError || err instanceof SchemaChanged) return err;
  const e = err as PgError;
  if (e?.code === '23505') {
    const tableIdFromIndex = e.constraint && /^t([0-9a-f]{32})_u_/.exec(e.constraint);
    const column = tableIdFromIndex
      ? columns.find((c) => c.unique && store.uniqueIndexName(`tbl_${tableIdFromIndex[1]}`, c.name) === e.constraint)
      : undefined;
    if (column) {
      const parsed = parseConflictValue(e.detail);
      const given = written.map((d) => d[column.name]).filter((v) => v !== undefined);
      let value: unknown = parsed;
      if (column.type === 'date') {
        // The index holds instants ("2024-05-01 00:00:00+00"): name the value as the caller wrote it.
        const ms = typeof parsed === 'string' ? Date.parse(parsed.replace(' ', 'T').replace(/([+-]\d{2})$/, '$1:00')) : NaN;
        value = given.find((v) => typeof v === 'string' && Date.parse(dateInstant(v)) === ms) ?? given[0] ?? parsed ?? null;
      } else if (parsed === undefined) {
        value = given[0] ?? null;
      }
      return new HttpError(409, `Column "${column.name}" must be unique: value ${JSON.stringify(value)} already exists`, {
        column: column.name, value,
      });
    }
    return new HttpError(409, 'Unique constraint violation');
  }
  // Values PostgreSQL refuses (text it cannot store, numbers out of range, too-deep or too-large jsonb).
  if (e?.code && /^(22|54)/.test(e.code)) return new HttpError(400, `Invalid value: ${e.message ?? 'rejected by the database'}`);
  return err;
}

function checkSizes(rows: WrittenRow[], positionOf?: (id: string) => number | undefined): void {
  const big = rows.find((r) => r.bytes > TABLE_LIMITS.maxRowBytes);
  if (!big) return;
  const at = positionOf?.(big.id);
  throw new HttpError(400, `${at !== undefined ? `Row ${at}: ` : ''}Row size exceeds limit (${big.bytes} bytes > ${TABLE_LIMITS.maxRowBytes} bytes)`, {
    details: [{ code: 'too_big', path: at !== undefined ? ['rows', at] : ['data'], message: 'Row size exceeds limit', rowId: big.id }],
  });
}

const byPosition = (a: { position: number | string }, b: { position: number | string }) => Number(a.position) - Number(b.position);
const bytesDelta = (rows: WrittenRow[]) => rows.reduce((s, r) => s + Number(r.bytes) - Number(r.old_bytes ?? 0), 0);

// ------------------------------------------------------------------------------------------------
// Planner statistics. PostgreSQL's autovacuum keeps table_rows analyzed; embedded PGlite has no
// autovacuum, so after as many row changes as autovacuum's default rule would wait for
// (50 + 10 % of the rows), and at most once per ANALYZE_INTERVAL_MS like autovacuum's nap time,
// the statistics are refreshed here, outside any transaction.
// ------------------------------------------------------------------------------------------------

const ANALYZE_INTERVAL_MS = 30_000;
const analyzeState = new WeakMap<Database, { changed: number; rows: number; running: boolean; last: number }>();

function noteRowChanges(db: Database, n: number): void {
  if (db.mode !== 'pglite' || n <= 0) return;
  let st = analyzeState.get(db);
  if (!st) {
    st = { changed: 0, rows: 0, running: false, last: 0 };
    analyzeState.set(db, st);
  }
  st.changed += n;
  const now = Date.now();
  if (st.running || st.changed < 50 + 0.1 * st.rows || now - st.last < ANALYZE_INTERVAL_MS) return;
  const state = st;
  state.running = true;
  state.changed = 0;
  state.last = now;
  (async () => {
    await db.exec('ANALYZE table_rows');
    const r = await db.query<{ n: number }>("SELECT reltuples::float8 AS n FROM pg_class WHERE relname = 'table_rows'");
    state.rows = Math.max(0, Number(r[0]?.n ?? 0));
  })()
    .catch(() => undefined)
    .finally(() => {
      state.running = false;
    });
}

// ------------------------------------------------------------------------------------------------
// Tables
// ------------------------------------------------------------------------------------------------

async function requireTable(q: Queryable, workspaceId: string, tableId: string): Promise<TableRow> {
  const t = await store.findTable(q, workspaceId, tableId);
  if (!t) throw tableNotFound();
  return t;
}

export async function getTable(db: Queryable, workspaceId: string, tableId: string): Promise<PublicTable> {
  return publicTable(await requireTable(db, workspaceId, tableId));
}

export async function listTables(db: Queryable, workspaceId: string): Promise<PublicTable[]> {
  return (await store.listTables(db, workspaceId)).map(publicTable);
}

export interface CreateTableInput {
  name: string;
  description?: string | null;
  columns: ColumnInput[];
}

function checkTableName(name: string): void {
  if (name.length === 0 || name.length > TABLE_LIMITS.maxTableNameLength) {
    throw new HttpError(400, `Invalid table name: must be 1 to ${TABLE_LIMITS.maxTableNameLength} characters`);
  }
  if (!NAME_PATTERN.test(name)) {
    throw new HttpError(400, `Invalid table name "${name}": use letters, digits and underscores, not starting with a digit`);
  }
}

export async function createTable(
  db: Database,
  scope: { workspaceId: string; plan: string },
  input: CreateTableInput,
  actor: Actor = {},
): Promise<PublicTable> {
  checkTableName(input.name);
  const description = input.description ?? '';
  if (description.length > TABLE_LIMITS.maxDescriptionLength) {
    throw new HttpError(400, `Description must be at most ${TABLE_LIMITS.maxDescriptionLength} characters`);
  }
  const columns = normalizeColumns(input.columns);
  const limits = tablePlanLimits(scope.plan);
  const id = newHexId('tbl_');
  try {
    const row = await db.tx(async (q) => {
      await store.lockWorkspaceTables(q, scope.workspaceId);
      const n = await store.countTables(q, scope.workspaceId);
      if (n >= limits.maxTables) throw new HttpError(403, `Workspace has reached maximum table limit (${limits.maxTables})`);
      const t = await store.insertTable(q, {
        id, workspaceId: scope.workspaceId, name: input.name, description, columns, maxRows: limits.maxRowsPerTable,
        createdBy: actor.userId ?? null,
      });
      for (const c of columns) await store.createColumnIndexes(q, id, c);
      await recordAudit(q, {
        workspaceId: scope.workspaceId, actorId: actor.userId, actorKeyId: actor.keyId, action: 'table.created',
        resourceType: 'table', resourceId: id, resourceName: t.name, metadata: { columns: columns.length },
      });
      return t;
    });
    return publicTable(row);
  } catch (err) {
    const e = err as PgError;
    if (e?.code === '23505' && e.constraint === 'tables_workspace_id_name_key') {
      throw new HttpError(400, `A table named "${input.name}" already exists in this workspace`);
    }
    throw err;
  }
}

export async function deleteTable(db: Database, workspaceId: string, tableId: string, actor: Actor = {}): Promise<void> {
  if (!store.isTableId(tableId)) throw tableNotFound();
  const rows = await db.tx(async (q) => {
    const t = await store.findTable(q, workspaceId, tableId, true);
    if (!t) throw tableNotFound();
    await store.deleteTable(q, tableId);
    await store.dropTableIndexes(q, tableId);
    await recordAudit(q, {
      workspaceId, actorId: actor.userId, actorKeyId: actor.keyId, action: 'table.deleted',
      resourceType: 'table', resourceId: tableId, resourceName: t.name, metadata: { rowCount: t.row_count },
    });
    return t.row_count;
  });
  noteRowChanges(db, rows);
}

/** Adds a column (at `position`, default last) and its indexes. Returns the full column list. */
export async function addColumn(
  db: Database,
  workspaceId: string,
  tableId: string,
  input: ColumnInput,
  position?: number,
): Promise<PublicColumn[]> {
  if (!store.isTableId(tableId)) throw tableNotFound();
  const column = normalizeColumn(input);
  try {
    const t = await db.tx(async (q) => {
      const table = await store.findTable(q, workspaceId, tableId, true);
      if (!table) throw tableNotFound();
      if (table.columns.some((c) => c.name.toLowerCase() === column.name.toLowerCase())) {
        throw new HttpError(400, `Column "${column.name}" already exists`);
      }
      if (table.columns.length >= TABLE_LIMITS.maxColumns) {
        throw new HttpError(400, `Table has reached the maximum of ${TABLE_LIMITS.maxColumns} columns`);
      }
      if (column.required && table.row_count > 0) {
        throw new HttpError(400, `Cannot add required column "${column.name}": the table already has ${table.row_count} rows without a value for it`);
      }
      const columns = [...table.columns];
      columns.splice(position === undefined ? columns.length : Math.min(position, columns.length), 0, column);
      const updated = await store.setColumns(q, tableId, columns);
      await store.createColumnIndexes(q, tableId, column);
      return updated;
    });
    return t.columns.map(publicColumn);
  } catch (err) {
    const e = err as PgError;
    if (e?.code === '23505') {
      throw new HttpError(409, `Cannot make column "${column.name}" unique: existing rows hold duplicate values`, { column: column.name });
    }
    throw err;
  }
}

/** Bytes of row data stored in a workspace's tables (for storage limits). */
export async function tableStorageBytes(db: Queryable, workspaceId: string): Promise<number> {
  return store.workspaceBytes(db, workspaceId);
}

/** Applies a plan's rows-per-table limit to every table of a workspace (call after a plan change). */
export async function applyPlanToTables(db: Queryable, workspaceId: string, plan: string): Promise<void> {
  await store.setMaxRows(db, workspaceId, tablePlanLimits(plan).maxRowsPerTable);
}

// ------------------------------------------------------------------------------------------------
// Rows
// ------------------------------------------------------------------------------------------------

/** Runs `fn` with the table's current schema, again (up to 3 times) when the schema changed meanwhile. */
async function withTable<T>(db: Database, workspaceId: string, tableId: string, fn: (table: TableRow) => Promise<T>): Promise<T> {
  for (let attempt = 0; ; attempt++) {
    const table = await requireTable(db, workspaceId, tableId);
    try {
      return await fn(table);
    } catch (err) {
      if (err instanceof SchemaChanged && attempt < 3) continue;
      throw err;
    }
  }
}

/** Locks the table for a row write; 404 when it is gone, SchemaChanged when validated against an older schema. */
async function lockForWrite(q: Queryable, table: TableRow) {
  const lock = await store.lockTable(q, table.id, table.workspace_id);
  if (!lock) throw tableNotFound();
  if (lock.schema_version !== table.schema_version) throw new SchemaChanged();
  return lock;
}

function rowLimitError(maxRows: number, adding: number): HttpError {
  return adding > 1
    ? new HttpError(400, `Inserting ${adding} rows would exceed this table's row limit (${maxRows} rows) on your current plan.`)
    : new HttpError(400, `This table has reached its row limit (${maxRows} rows) on your current plan.`);
}

/**
 * Adds a write's byte delta to the table and, when it grows and the workspace has a storage limit,
 * refuses it inside the same transaction if the workspace's tables now exceed the limit.
 */
async function addBytes(q: Queryable, table: TableRow, delta: number, quota: number | undefined): Promise<void> {
  await store.adjustCounters(q, table.id, 0, delta);
  if (quota === undefined || delta <= 0) return;
  const used = await store.workspaceBytes(q, table.workspace_id);
  if (used > quota) {
    throw new HttpError(403, `Storage limit exceeded: this write needs ${delta} more bytes and the workspace's plan allows ${quota} bytes (${Math.max(0, quota - (used - delta))} free)`, { code: 'STORAGE_LIMIT_EXCEEDED' });
  }
}

async function insertPrepared(q: Queryable, table: TableRow, rows: Data[], quota: number | undefined): Promise<WrittenRow[]> {
  const payload = JSON.stringify(rows.map((data) => ({ id: newHexId('row_'), data })));
  const first = await store.reserveRows(q, table.id, table.workspace_id, rows.length, table.schema_version);
  if (first === undefined) {
    const now = await store.findTable(q, table.workspace_id, table.id);
    if (!now) throw tableNotFound();
    if (now.schema_version !== table.schema_version) throw new SchemaChanged();
    throw rowLimitError(now.max_rows, rows.length);
  }
  const written: WrittenRow[] = (await store.insertRows(q, table.id, first, payload))
    .map((r) => ({ ...r, data: rows[Number(r.position) - first] }))
    .sort(byPosition);
  checkSizes(written, rows.length > 1 ? (id) => written.findIndex((r) => r.id === id) : undefined);
  await addBytes(q, table, bytesDelta(written), quota);
  return written;
}

/** Inserts rows (all or none). `batch` words errors per row index (`rows[i]`). */
export async function insertRows(db: Database, workspaceId: string, tableId: string, inputs: Data[], batch: boolean): Promise<PublicRow[]> {
  if (inputs.length === 0) throw new HttpError(400, 'rows must contain at least one row');
  if (inputs.length > TABLE_LIMITS.maxBatch) throw new HttpError(400, `At most ${TABLE_LIMITS.maxBatch} rows can be inserted at once`);
  return withTable(db, workspaceId, tableId, async (table) => {
    const columns = columnMap(table.columns);
    const issues: RowIssue[] = [];
    const prepared = inputs.map((data, i) => {
      const r = prepareRow(columns, data, { full: true, path: batch ? ['rows', i] : ['data'], row: batch ? i : undefined });
      issues.push(...r.issues);
      return r.row.set;
    });
    if (issues.length > 0) throw rowIssuesError(issues);
    try {
      const quota = await storageQuota(db, workspaceId);
      const written = await db.tx(async (q) => insertPrepared(q, table, prepared, quota));
      noteRowChanges(db, written.length);
      return written.map((r) => publicRow(r, table.columns));
    } catch (err) {
      throw mapWriteError(err, table.columns, prepared);
    }
  });
}

export interface RowQuery {
  filter?: Filter;
  sort?: Sort;
  limit?: number;
  offset?: number;
}

export async function queryRows(
  db: Queryable,
  workspaceId: string,
  tableId: string,
  query: RowQuery,
): Promise<{ rows: PublicRow[]; totalCount: number; limit: number; offset: number }> {
  const limit = query.limit ?? TABLE_LIMITS.defaultQueryLimit;
  const offset = query.offset ?? 0;
  if (!Number.isInteger(limit) || limit < 1 || limit > TABLE_LIMITS.maxQueryLimit) {
    throw new HttpError(400, `limit must be an integer from 1 to ${TABLE_LIMITS.maxQueryLimit}`);
  }
  if (!Number.isInteger(offset) || offset < 0) throw new HttpError(400, 'offset must be an integer of at least 0');
  const table = await requireTable(db, workspaceId, tableId);
  const params = new SqlParams([table.id]);
  const f = compileFilter(query.filter, table.columns, params, 'r');
  const orderBy = compileSort(query.sort, table.columns, f.nonNull, 'r');
  const rows = await store.selectRows(db, f.sql, orderBy, params.values, limit, offset);
  let totalCount: number;
  if (rows.length > 0 && rows.length < limit) totalCount = offset + rows.length;
  else if (offset === 0 && rows.length === 0) totalCount = 0;
  else if (f.sql === 'TRUE') totalCount = rows.length > 0 ? Math.max(table.row_count, offset + rows.length) : table.row_count;
  else totalCount = await store.countRows(db, f.sql, params.values);
  return { rows: rows.map((r) => publicRow(r, table.columns)), totalCount, limit, offset };
}

export async function getRow(db: Queryable, workspaceId: string, tableId: string, rowId: string): Promise<PublicRow> {
  const table = await requireTable(db, workspaceId, tableId);
  const row = store.isRowId(rowId) ? await store.findRow(db, table.id, rowId) : undefined;
  if (!row) throw rowNotFound();
  return publicRow(row, table.columns);
}

function preparePatch(table: TableRow, data: Data, path: (string | number)[], row?: number) {
  const r = prepareRow(columnMap(table.columns), data, { full: false, path, row });
  if (r.issues.length > 0) throw rowIssuesError(r.issues);
  return r.row;
}

function checkBatchLimit(limit: number | undefined): void {
  if (limit !== undefined && (!Number.isInteger(limit) || limit < 1 || limit > TABLE_LIMITS.maxBatch)) {
    throw new HttpError(400, `limit must be an integer from 1 to ${TABLE_LIMITS.maxBatch}`);
  }
}

function nonEmptyFilter(filter: Filter | undefined): Filter {
  if (!filter || Object.keys(filter).length === 0) throw new HttpError(400, 'Filter must not be empty');
  return filter;
}

/** Merges `data` into every row matching `filter` (or the first `limit` of them in table order). */
export async function updateRowsByFilter(
  db: Database,
  workspaceId: string,
  tableId: string,
  filter: Filter,
  data: Data,
  limit?: number,
): Promise<string[]> {
  checkBatchLimit(limit);
  const table = await requireTable(db, workspaceId, tableId);
  const params = new SqlParams([table.id]);
  const f = compileFilter(nonEmptyFilter(filter), table.columns, params, 'r');
  const patch = preparePatch(table, data, ['data']);
  if (Object.keys(patch.set).length === 0 && patch.unset.length === 0) return [];
  const quota = await storageQuota(db, workspaceId);
  try {
    const written = await db.tx(async (q) => {
      const lock = await store.lockTable(q, table.id, workspaceId);
      if (!lock) throw tableNotFound();
      const rows = await store.mergeIntoMatching(q, f.sql, params.values, patch.set, patch.unset, limit);
      checkSizes(rows);
      await addBytes(q, table, bytesDelta(rows), quota);
      return rows;
    });
    noteRowChanges(db, written.length);
    return written.sort(byPosition).map((r) => r.id);
  } catch (err) {
    throw mapWriteError(err, table.columns, [patch.set]);
  }
}

export interface RowUpdate {
  rowId: string;
  data: Data;
}

/** Merges a patch into each listed row; every row must exist, else nothing is written. */
export async function updateRowsById(db: Database, workspaceId: string, tableId: string, updates: RowUpdate[]): Promise<string[]> {
  if (updates.length === 0) throw new HttpError(400, 'updates must contain at least one entry');
  if (updates.length > TABLE_LIMITS.maxBatch) throw new HttpError(400, `At most ${TABLE_LIMITS.maxBatch} rows can be updated at once`);
  const ids = updates.map((u) => u.rowId);
  if (new Set(ids).size !== ids.length) throw new HttpError(400, 'updates must not contain duplicate rowId values');
  const table = await requireTable(db, workspaceId, tableId);
  const issues: RowIssue[] = [];
  const patches = updates.map((u, i) => {
    const r = prepareRow(columnMap(table.columns), u.data, { full: false, path: ['updates', i, 'data'], row: i });
    issues.push(...r.issues);
    return { id: u.rowId, s: r.row.set, u: r.row.unset };
  });
  if (issues.length > 0) throw rowIssuesError(issues);
  const malformed = ids.filter((id) => !store.isRowId(id));
  if (malformed.length > 0) throw new HttpError(400, `Rows not found: ${malformed.slice(0, 20).join(', ')}`);
  const quota = await storageQuota(db, workspaceId);
  try {
    const written = await db.tx(async (q) => {
      const lock = await store.lockTable(q, table.id, workspaceId);
      if (!lock) throw tableNotFound();
      const rows = await store.mergeById(q, table.id, JSON.stringify(patches));
      if (rows.length !== ids.length) {
        const found = new Set(rows.map((r) => r.id));
        throw new HttpError(400, `Rows not found: ${ids.filter((id) => !found.has(id)).slice(0, 20).join(', ')}`);
      }
      checkSizes(rows, (id) => ids.indexOf(id));
      await addBytes(q, table, bytesDelta(rows), quota);
      return rows;
    });
    noteRowChanges(db, written.length);
    const order = new Map(ids.map((id, i) => [id, i]));
    return written.map((r) => r.id).sort((a, b) => (order.get(a) ?? 0) - (order.get(b) ?? 0));
  } catch (err) {
    throw mapWriteError(err, table.columns, patches.map((p) => p.s));
  }
}

/** Merges `data` into one row and returns it. */
export async function updateRow(db: Database, workspaceId: string, tableId: string, rowId: string, data: Data): Promise<PublicRow> {
  const table = await requireTable(db, workspaceId, tableId);
  const patch = preparePatch(table, data, ['data']);
  if (!store.isRowId(rowId)) throw rowNotFound();
  if (Object.keys(patch.set).length === 0 && patch.unset.length === 0) {
    const row = await store.findRow(db, table.id, rowId);
    if (!row) throw rowNotFound();
    return publicRow(row, table.columns);
  }
  const quota = await storageQuota(db, workspaceId);
  try {
    const written = await db.tx(async (q) => {
      const lock = await store.lockTable(q, table.id, workspaceId);
      if (!lock) throw tableNotFound();
      const rows = await store.mergeById(q, table.id, JSON.stringify([{ id: rowId, s: patch.set, u: patch.unset }]));
      if (rows.length === 0) throw rowNotFound();
      checkSizes(rows);
      await addBytes(q, table, bytesDelta(rows), quota);
      return rows[0];
    });
    return publicRow(written, table.columns);
  } catch (err) {
    throw mapWriteError(err, table.columns, [patch.set]);
  }
}

export interface DeleteResult {
  deletedRowIds: string[];
  missingRowIds?: string[];
}

/** Deletes rows by id (unknown ids are reported, not an error) or by a non-empty filter. */
export async function deleteRows(
  db: Database,
  workspaceId: string,
  tableId: string,
  target: { rowIds: string[] } | { filter: Filter; limit?: number },
): Promise<DeleteResult> {
  const table = await requireTable(db, workspaceId, tableId);
  if ('rowIds' in target) {
    const ids = [...new Set(target.rowIds)];
    if (ids.length === 0) throw new HttpError(400, 'rowIds must contain at least one id');
    if (ids.length > TABLE_LIMITS.maxBatch) throw new HttpError(400, `At most ${TABLE_LIMITS.maxBatch} rows can be deleted at once`);
    const valid = ids.filter(store.isRowId);
    const deleted = await db.tx(async (q) => {
      const lock = await store.lockTable(q, table.id, workspaceId);
      if (!lock) throw tableNotFound();
      const rows = valid.length > 0 ? await store.deleteByIds(q, table.id, valid) : [];
      await store.adjustCounters(q, table.id, -rows.length, -rows.reduce((s, r) => s + Number(r.bytes), 0));
      return rows;
    });
    noteRowChanges(db, deleted.length);
    const gone = new Set(deleted.map((r) => r.id));
    const missing = ids.filter((id) => !gone.has(id));
    return { deletedRowIds: ids.filter((id) => gone.has(id)), ...(missing.length > 0 ? { missingRowIds: missing } : {}) };
  }
  checkBatchLimit(target.limit);
  const params = new SqlParams([table.id]);
  const f = compileFilter(nonEmptyFilter(target.filter), table.columns, params, 'r');
  const deleted = await db.tx(async (q) => {
    const lock = await store.lockTable(q, table.id, workspaceId);
    if (!lock) throw tableNotFound();
    const rows = await store.deleteMatching(q, f.sql, params.values, target.limit);
    await store.adjustCounters(q, table.id, -rows.length, -rows.reduce((s, r) => s + Number(r.bytes), 0));
    return rows;
  });
  noteRowChanges(db, deleted.length);
  return { deletedRowIds: deleted.sort(byPosition).map((r) => r.id) };
}

export async function deleteRow(db: Database, workspaceId: string, tableId: string, rowId: string): Promise<void> {
  const table = await requireTable(db, workspaceId, tableId);
  if (!store.isRowId(rowId)) throw rowNotFound();
  await db.tx(async (q) => {
    const lock = await store.lockTable(q, table.id, workspaceId);
    if (!lock) throw tableNotFound();
    const rows = await store.deleteByIds(q, table.id, [rowId]);
    if (rows.length === 0) throw rowNotFound();
    await store.adjustCounters(q, table.id, -1, -Number(rows[0].bytes));
  });
}

/**
 * Inserts a row, or replaces the data of the row whose `conflictTarget` unique column holds the same
 * value. The target may be omitted when the table has exactly one unique column.
 */
export async function upsertRow(
  db: Database,
  workspaceId: string,
  tableId: string,
  data: Data,
  conflictTarget?: string,
): Promise<{ row: PublicRow; operation: 'insert' | 'update' }> {
  return withTable(db, workspaceId, tableId, async (table) => {
    const uniques = table.columns.filter((c) => c.unique);
    if (uniques.length === 0) throw new HttpError(400, 'Upsert requires at least one unique column in the table');
    let target: Column | undefined;
    if (conflictTarget !== undefined) {
      target = table.columns.find((c) => c.name === conflictTarget);
      if (!target) throw new HttpError(400, `Unknown column "${conflictTarget}" in conflictTarget`);
      if (!target.unique) throw new HttpError(400, `conflictTarget "${conflictTarget}" is not a unique column. Unique columns: ${uniques.map((c) => c.name).join(', ')}`);
    } else if (uniques.length === 1) {
      target = uniques[0];
    } else {
      throw new HttpError(400, `The table has several unique columns: give conflictTarget (one of ${uniques.map((c) => c.name).join(', ')})`);
    }
    const r = prepareRow(columnMap(table.columns), data, { full: true, path: ['data'] });
    if (r.issues.length > 0) throw rowIssuesError(r.issues);
    const set = r.row.set;
    const value = set[target.name];
    if (value === undefined) throw new HttpError(400, `Upsert data must include a value for the conflict target column "${target.name}"`);
    const key = target;
    const quota = await storageQuota(db, workspaceId);
    try {
      const out = await db.tx(async (q) => {
        await lockForWrite(q, table);
        const existing = await store.findByUnique(q, table.id, key, value);
        if (existing) {
          const row = await store.replaceRow(q, table.id, existing.id, set);
          if (!row) throw rowNotFound();
          checkSizes([row]);
          await addBytes(q, table, bytesDelta([row]), quota);
          return { row, operation: 'update' as const };
        }
        const [row] = await insertPrepared(q, table, [set], quota);
        return { row, operation: 'insert' as const };
      });
      noteRowChanges(db, 1);
      return { row: publicRow(out.row, table.columns), operation: out.operation };
    } catch (err) {
      throw mapWriteError(err, table.columns, [set]);
    }
  });
}

// ------------------------------------------------------------------------------------------------
// Engine port
// ------------------------------------------------------------------------------------------------

/** The `table` block's port, scoped to one workspace. `tableId` may also be the table's name. */
export function createTablesPort(db: Database, workspaceId: string, _plan: string): TablesPort {
  const resolve = async (tableIdOrName: string): Promise<string> => {
    if (store.isTableId(tableIdOrName)) return tableIdOrName;
    const t = await store.findTableByName(db, workspaceId, tableIdOrName);
    if (!t) throw tableNotFound();
    return t.id;
  };
  return {
    async query(args) {
      return queryRows(db, workspaceId, await resolve(args.tableId), args);
    },
    async get(args) {
      return getRow(db, workspaceId, await resolve(args.tableId), args.rowId);
    },
    async insert(args) {
      const tableId = await resolve(args.tableId);
      if (args.rows) return { rows: await insertRows(db, workspaceId, tableId, args.rows, true) };
      return { rows: await insertRows(db, workspaceId, tableId, [args.data ?? {}], false) };
    },
    async upsert(args) {
      return upsertRow(db, workspaceId, await resolve(args.tableId), args.data, args.conflictTarget);
    },
    async update(args) {
      const tableId = await resolve(args.tableId);
      if (args.rowId !== undefined) {
        const row = await updateRow(db, workspaceId, tableId, args.rowId, args.data);
        return { updatedRowIds: [row.id] };
      }
      return { updatedRowIds: await updateRowsByFilter(db, workspaceId, tableId, args.filter ?? {}, args.data, args.limit) };
    },
    async delete(args) {
      const tableId = await resolve(args.tableId);
      if (args.rowId !== undefined) {
        await deleteRow(db, workspaceId, tableId, args.rowId);
        return { deletedRowIds: [args.rowId] };
      }
      if (args.rowIds !== undefined) {
        return { deletedRowIds: (await deleteRows(db, workspaceId, tableId, { rowIds: args.rowIds })).deletedRowIds };
      }
      return { deletedRowIds: (await deleteRows(db, workspaceId, tableId, { filter: args.filter ?? {}, limit: args.limit })).deletedRowIds };
    },
  };
}
