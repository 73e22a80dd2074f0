import { type Database, type Queryable, statementCancelled } from '../db/database.js';
import { HttpError } from '../http/errors.js';
import { QUERY_TIMEOUT_CODE, type QueryTimeout } from '../limits/query-timeout.js';
import type { ScanMeter, WorkspaceGate } from '../limits/workspace-gate.js';
import type { StorageGuard } from '../limits/storage.js';
import { newHexId } from '../ids.js';
import { type Column, type RowIssue, columnMap, prepareRow, rowIssuesError } from './columns.js';
import { requireTable, rowNotFound, tableNotFound } from './errors.js';
import { TABLE_LIMITS } from './limits.js';
import type { PlannerStats } from './planner-stats.js';
import * as store from './store.js';
import { refuseLocked } from './table-locks.js';
import type { TableLock, TableRow, WrittenRow } from './store.js';
import { type Filter, type RowPage, type RowQuery, checkPaging, compileWhere, queryPage } from './row-query.js';
import { type PublicRow, publicRow } from './wire-format.js';
import { SchemaChanged, checkRowSizes, mapRowWriteError, rowLimitError } from './write-errors.js';
import * as rewrites from './table-rewrites.js';

/** Rows of user tables: every write goes through one path (`writeRows`); reads are in row-query.ts. Scoped to a workspace per call. */

type Data = Record<string, unknown>;
export type { Filter, RowPage, RowQuery, Sort } from './row-query.js';

export interface RowUpdate {
  rowId: string;
  data: Data;
}

export interface UpsertResult {
  row: PublicRow;
  operation: 'insert' | 'update';
}

export interface DeleteResult {
  deletedRowIds: string[];
  missingRowIds?: string[];
}

/** Where a single inserted row goes: right after or right before an existing row of the table. */
export interface RowAnchor {
  rowId: string;
  side: 'after' | 'before';
}

export interface RowServiceDeps {
  storage: StorageGuard;
  stats: PlannerStats;
  /** Bytes of row data one page of a query returns at most. */
  maxPageBytes: number;
  /** How many of a workspace's filtered reads and writes run at once (the rest wait their turn). */
  gate: WorkspaceGate;
  /**
   * How long a query or a filtered write may hold the database (503 `QUERY_TIMEOUT` past it; docs/architecture.md,
   * Tables: bounded statements).
   */
  queryTimeout: QueryTimeout;
}

/** What a write changed, for the counters, the size and storage checks, and the planner statistics. */
interface RowChanges<T> {
  inserted?: WrittenRow[];
  updated?: WrittenRow[];
  deleted?: { id: string; bytes: number }[];
  result: T;
}

/** Inside a write's transaction, with the table locked. */
interface WriteContext {
  q: Queryable;
  lock: TableLock;
  /**
   * Inserts rows within the table's row cap (all or none): at the end of the table, or one row next to `anchor`
   * (404 when the table has no such row).
   */
  insert(rows: Data[], anchor?: RowAnchor): Promise<WrittenRow[]>;
}

/** A prepared write: validated against `table`, ready to run. */
interface RowWrite<T> {
  /**
   * The data the write carries, validated against the table's schema. When given, a schema change since
   * the validation makes the write start over (validated again); it also names a unique conflict's value.
   */
  data?: Data[];
  /** Batch index of a row, to word a row size error per entry (`Row 3: ...`). */
  indexOf?: (id: string) => number | undefined;
  apply(ctx: WriteContext): Promise<RowChanges<T>>;
}

/** What a write's preparation returns: the write, or its answer when nothing needs writing. */
type Prepared<T> = RowWrite<T> | { done: T };

const byPosition = (a: { position: number | string }, b: { position: number | string }) => Number(a.position) - Number(b.position);
const sumBytes = (rows: { bytes: number }[]) => rows.reduce((s, r) => s + Number(r.bytes), 0);

function checkBatchLimit(limit: number | undefined): void {
  if (limit !== undefined && (!Number.isInteger(limit) || limit < 1 || limit > TABLE_LIMITS.maxBatch)) {
    throw new HttpError(400, `limit must be an integer from 1 to ${TABLE_LIMITS.maxBatch}`);
  }
}

function nonEmptyFilter(filter: Filter | undefined): Filter {
  if (!filter || Object.keys(filter).length === 0) throw new HttpError(400, 'Filter must not be empty');
  return filter;
}

function preparePatch(table: TableRow, data: Data, path: (string | number)[]) {
  const r = prepareRow(columnMap(table.columns), data, { full: false, path });
  if (r.issues.length > 0) throw rowIssuesError(r.issues);
  return r.row;
}

const emptyPatch = (p: { set: Data; unset: string[] }) => Object.keys(p.set).length === 0 && p.unset.length === 0;

export class RowService {
  constructor(
    private readonly db: Database,
    private readonly deps: RowServiceDeps,
  ) {}


  /**
   * The one path of every row write (insert, update, upsert, delete): looks the table up, prepares the
   * write against its schema, then in one transaction locks the table, writes, refuses rows over the size
   * limit, updates the table's row, byte and position counters and checks the workspace's storage.
   * Database errors become the HTTP errors they stand for; a schema change since the validation starts
   * over (up to 3 times). A write that scans by a filter passes the gate's `scan` meter: it is bounded in time
   * like a query, and its time holding the database is charged to the workspace.
   */
  private async writeRows<T>(
    workspaceId: string, tableId: string, prepare: (table: TableRow) => Prepared<T> | Promise<Prepared<T>>, scan?: ScanMeter,
  ): Promise<T> {
    // A write that scans by a filter is bounded in time like a query (limits/query-timeout.ts).
    const transaction = <R>(fn: (q: Queryable) => Promise<R>) => (scan ? this.deps.queryTimeout.tx(this.db, fn) : this.db.tx(fn));
    for (let attempt = 0; ; attempt++) {
      const table = await requireTable(this.db, workspaceId, tableId);
      const write = await prepare(table);
      if ('done' in write) return write.done;
      try {
        const { result, changed } = await transaction(async (q) => {
          const lock = await store.lockTable(q, table.id, workspaceId);
          if (!lock) throw tableNotFound();
          scan?.holding();
          if (write.data && lock.schema_version !== table.schema_version) throw new SchemaChanged();
          // Rows inserted so far, and how far the next position moved on: rows at the end take one each, a
          // row placed before others moves them on by one.
          let insertedSoFar = 0;
          let positionsUsed = 0;
          const insert = async (rows: Data[], anchor?: RowAnchor): Promise<WrittenRow[]> => {
            if (lock.row_count + insertedSoFar + rows.length > lock.max_rows) throw rowLimitError(lock.max_rows, rows.length);
            let first = lock.next_position + positionsUsed;
            if (anchor) {
              if (rows.length !== 1) throw new Error('an anchored insert places one row');
              const at = store.isRowId(anchor.rowId) ? await rewrites.rowPosition(q, table.id, anchor.rowId) : undefined;
              if (at === undefined) throw rowNotFound();
              first = anchor.side === 'after' ? at + 1 : at;
              const moved = await rewrites.openPosition(q, table.id, first);
              positionsUsed += (moved || first >= lock.next_position + positionsUsed) ? 1 : 0;
            } else {
              positionsUsed += rows.length;
            }
            insertedSoFar += rows.length;
            const payload = JSON.stringify(rows.map((data) => ({ id: newHexId('row_'), data })));
            return (await store.insertRows(q, table.id, first, payload))
              .map((r) => ({ ...r, data: rows[Number(r.position) - first] }))
              .sort(byPosition);
          };
          const c = await write.apply({ q, lock, insert });
          const inserted = c.inserted ?? [];
          const updated = c.updated ?? [];
          const deleted = c.deleted ?? [];
          // Read under the table's row lock: a lock set after `prepare` read the table still refuses the write,
          // and an upsert is refused for what it turned out to do.
          if (inserted.length > 0) refuseLocked(lock.locked, 'insert');
          if (updated.length > 0) refuseLocked(lock.locked, 'update');
          if (deleted.length > 0) refuseLocked(lock.locked, 'delete');
          checkRowSizes([...inserted, ...updated], write.indexOf);
          const addedBytes = sumBytes(inserted) + updated.reduce((s, r) => s + Number(r.bytes) - Number(r.old_bytes ?? 0), 0) - sumBytes(deleted);
          await store.adjustCounters(q, table.id, inserted.length - deleted.length, addedBytes, positionsUsed);
          await this.deps.storage.checkAfterWrite(q, workspaceId, addedBytes);
          return { result: c.result, changed: inserted.length + updated.length + deleted.length };
        });
        this.deps.stats.noteRowChanges(changed);
        return result;
      } catch (err) {
        if (err instanceof SchemaChanged && attempt < 3) continue;
        throw mapRowWriteError(err, table.columns, write.data);
      }
    }
  }

  /**
   * Inserts rows (all or none). `batch` words errors per row index (`rows[i]`). A single row may be placed next
   * to `anchor`, the rows from there on moving one place on; otherwise rows go at the end.
   */
  async insertRows(workspaceId: string, tableId: string, inputs: Data[], batch: boolean, anchor?: RowAnchor): Promise<PublicRow[]> {
    if (inputs.length === 0) throw new HttpError(400, 'rows must contain at least one row');
    if (anchor && inputs.length !== 1) throw new HttpError(400, 'afterRowId and beforeRowId place a single row');
    if (inputs.length > TABLE_LIMITS.maxBatch) throw new HttpError(400, `At most ${TABLE_LIMITS.maxBatch} rows can be inserted at once`);
    if (anchor) {
      // Placing a row moves every row after it, so it costs what the table holds from there, like a write by filter:
      // it takes a place among the workspace's scans, is bounded in time and its time is charged to the workspace.
      return this.deps.gate.run(workspaceId, async (meter) => {
        try {
          return await this.insertRowsWith(workspaceId, tableId, inputs, batch, anchor, meter);
        } catch (err) {
          if (!statementCancelled(err)) throw err;
          throw new HttpError(503, `Placing the row moved the rows after it for longer than ${this.deps.queryTimeout.ms} ms and was stopped: insert it without afterRowId or beforeRowId`,
            { code: QUERY_TIMEOUT_CODE });
        }
      });
    }
    return this.insertRowsWith(workspaceId, tableId, inputs, batch);
  }

  private insertRowsWith(workspaceId: string, tableId: string, inputs: Data[], batch: boolean, anchor?: RowAnchor, scan?: ScanMeter): Promise<PublicRow[]> {
    return this.writeRows(workspaceId, tableId, (table) => {
      refuseLocked(table.locked, 'insert');
      const columns = columnMap(table.columns);
      const issues: RowIssue[] = [];
      const prepared = inputs.map((data, i) => {
        const r = prepareRow(columns, data, { full: true, path: batch ? ['rows', i] : ['data'], row: batch ? i : undefined });
        issues.push(...r.issues);
        return r.row.set;
      });
      if (issues.length > 0) throw rowIssuesError(issues);
      let written: WrittenRow[] = [];
      return {
        data: prepared,
        indexOf: inputs.length > 1 ? (id) => written.findIndex((r) => r.id === id) : undefined,
        apply: async ({ insert }) => {
          written = await insert(prepared, anchor);
          return { inserted: written, result: written.map((r) => publicRow(r, table.columns)) };
        },
      };
    }, scan);
  }

  async queryRows(workspaceId: string, tableId: string, query: RowQuery): Promise<RowPage> {
    checkPaging(query);
    const { queryTimeout, maxPageBytes } = this.deps;
    return this.deps.gate.run(workspaceId, (meter) =>
      queryTimeout.run(this.db, 'query', async (q) => {
        const table = await requireTable(q, workspaceId, tableId);
        // Answered: the transaction holds the database from here (on the embedded one, every other statement waits).
        meter.holding();
        return queryPage(q, table, query, maxPageBytes);
      }));
  }

  async getRow(workspaceId: string, tableId: string, rowId: string): Promise<PublicRow> {
    const table = await requireTable(this.db, workspaceId, tableId);
    const row = store.isRowId(rowId) ? await store.findRow(this.db, table.id, rowId) : undefined;
    if (!row) throw rowNotFound();
    return publicRow(row, table.columns);
  }

  /** Merges `data` into every row matching `filter` (or the first `limit` of them in table order). */
  async updateRowsByFilter(workspaceId: string, tableId: string, filter: Filter, data: Data, limit?: number): Promise<string[]> {
    checkBatchLimit(limit);
    return this.deps.gate.run(workspaceId, (meter) => this.deps.queryTimeout.answering('update', this.writeRows<string[]>(workspaceId, tableId, (table) => {
      refuseLocked(table.locked, 'update');
      const { rows: matching } = compileWhere(table, nonEmptyFilter(filter));
      const patch = preparePatch(table, data, ['data']);
      if (emptyPatch(patch)) return { done: [] };
      return {
        data: [patch.set],
        apply: async ({ q }) => {
          const rows = await store.mergeIntoMatching(q, matching, patch.set, patch.unset, limit);
          return { updated: rows, result: [...rows].sort(byPosition).map((r) => r.id) };
        },
      };
    }, meter)));
  }

  /** Merges a patch into each listed row; every row must exist, else nothing is written. */
  async updateRowsById(workspaceId: string, tableId: string, updates: RowUpdate[]): Promise<string[]> {
    if (updates.length === 0) throw new HttpError(400, 'updates must contain at least one entry');
    if (updates.length > TABLE_LIMITS.maxBatch) throw new HttpError(400, `At most ${TABLE_LIMITS.maxBatch} rows can be updated at once`);
    const ids = updates.map((u) => u.rowId);
    if (new Set(ids).size !== ids.length) throw new HttpError(400, 'updates must not contain duplicate rowId values');
    const order = new Map(ids.map((id, i) => [id, i]));
    return this.writeRows(workspaceId, tableId, (table) => {
      refuseLocked(table.locked, 'update');
      const columns = columnMap(table.columns);
      const issues: RowIssue[] = [];
      const patches = updates.map((u, i) => {
        const r = prepareRow(columns, u.data, { full: false, path: ['updates', i, 'data'], row: i });
        issues.push(...r.issues);
        return { id: u.rowId, s: r.row.set, u: r.row.unset };
      });
      if (issues.length > 0) throw rowIssuesError(issues);
      const malformed = ids.filter((id) => !store.isRowId(id));
      if (malformed.length > 0) throw new HttpError(400, `Rows not found: ${malformed.slice(0, 20).join(', ')}`);
      return {
        data: patches.map((p) => p.s),
        indexOf: (id) => order.get(id),
        apply: async ({ q }) => {
          const rows = await store.mergeById(q, table.id, patches);
          if (rows.length !== ids.length) {
            const found = new Set(rows.map((r) => r.id));
            throw new HttpError(400, `Rows not found: ${ids.filter((id) => !found.has(id)).slice(0, 20).join(', ')}`);
          }
          return { updated: rows, result: rows.map((r) => r.id).sort((a, b) => (order.get(a) ?? 0) - (order.get(b) ?? 0)) };
        },
      };
    });
  }

  /** Merges `data` into one row and returns it. */
  async updateRow(workspaceId: string, tableId: string, rowId: string, data: Data): Promise<PublicRow> {
    return this.writeRows<PublicRow>(workspaceId, tableId, async (table) => {
      refuseLocked(table.locked, 'update');
      const patch = preparePatch(table, data, ['data']);
      if (!store.isRowId(rowId)) throw rowNotFound();
      if (emptyPatch(patch)) {
        // Nothing to change: the row as it is.
        const row = await store.findRow(this.db, table.id, rowId);
        if (!row) throw rowNotFound();
        return { done: publicRow(row, table.columns) };
      }
      return {
        data: [patch.set],
        apply: async ({ q }) => {
          const rows = await store.mergeById(q, table.id, [{ id: rowId, s: patch.set, u: patch.unset }]);
          if (rows.length === 0) throw rowNotFound();
          return { updated: rows, result: publicRow(rows[0], table.columns) };
        },
      };
    });
  }

  /** Deletes rows by id (unknown ids are reported, not an error) or by a non-empty filter. */
  async deleteRows(
    workspaceId: string,
    tableId: string,
    target: { rowIds: string[] } | { filter: Filter; limit?: number },
  ): Promise<DeleteResult> {
    if ('rowIds' in target) {
      const ids = [...new Set(target.rowIds)];
      return this.writeRows(workspaceId, tableId, (table) => {
        refuseLocked(table.locked, 'delete');
        if (ids.length === 0) throw new HttpError(400, 'rowIds must contain at least one id');
        if (ids.length > TABLE_LIMITS.maxBatch) throw new HttpError(400, `At most ${TABLE_LIMITS.maxBatch} rows can be deleted at once`);
        const valid = ids.filter(store.isRowId);
        return {
          apply: async ({ q }) => {
            const rows = valid.length > 0 ? await store.deleteByIds(q, table.id, valid) : [];
            const gone = new Set(rows.map((r) => r.id));
            const missing = ids.filter((id) => !gone.has(id));
            return {
              deleted: rows,
              result: { deletedRowIds: ids.filter((id) => gone.has(id)), ...(missing.length > 0 ? { missingRowIds: missing } : {}) },
            };
          },
        };
      });
    }
    return this.deps.gate.run(workspaceId, (meter) => this.deps.queryTimeout.answering('delete', this.writeRows(workspaceId, tableId, (table) => {
      refuseLocked(table.locked, 'delete');
      checkBatchLimit(target.limit);
      const { rows: matching } = compileWhere(table, nonEmptyFilter(target.filter));
      return {
        apply: async ({ q }) => {
          const rows = await store.deleteMatching(q, matching, target.limit);
          return { deleted: rows, result: { deletedRowIds: [...rows].sort(byPosition).map((r) => r.id) } };
        },
      };
    }, meter)));
  }

  async deleteRow(workspaceId: string, tableId: string, rowId: string): Promise<void> {
    await this.writeRows(workspaceId, tableId, (table) => {
      refuseLocked(table.locked, 'delete');
      if (!store.isRowId(rowId)) throw rowNotFound();
      return {
        apply: async ({ q }) => {
          const rows = await store.deleteByIds(q, table.id, [rowId]);
          if (rows.length === 0) throw rowNotFound();
          return { deleted: rows, result: undefined };
        },
      };
    });
  }

  /**
   * Inserts a row, or replaces the data of the row whose `conflictTarget` unique column holds the same
   * value. The target may be omitted when the table has exactly one unique column.
   */
  async upsertRow(
    workspaceId: string,
    tableId: string,
    data: Data,
    conflictTarget?: string,
  ): Promise<UpsertResult> {
    return this.writeRows<UpsertResult>(workspaceId, tableId, (table) => {
      const target = conflictColumn(table, conflictTarget);
      const r = prepareRow(columnMap(table.columns), data, { full: true, path: ['data'] });
      if (r.issues.length > 0) throw rowIssuesError(r.issues);
      const set = r.row.set;
      const value = set[target.name];
      if (value === undefined) throw new HttpError(400, `Upsert data must include a value for the conflict target column "${target.name}"`);
      return {
        data: [set],
        apply: async ({ q, insert }) => {
          const existing = await store.findByUnique(q, table.id, target, value);
          if (existing) {
            const row = await store.replaceRow(q, table.id, existing.id, set);
            if (!row) throw rowNotFound();
            return { updated: [row], result: { row: publicRow(row, table.columns), operation: 'update' } };
          }
          const [row] = await insert([set]);
          return { inserted: [row], result: { row: publicRow(row, table.columns), operation: 'insert' } };
        },
      };
    });
  }
}

/** The unique column an upsert matches on: the one named, or the table's only unique column. */
function conflictColumn(table: TableRow, conflictTarget: string | undefined): Column {
  const uniques = table.columns.filter((c) => c.unique);
  if (uniques.length === 0) throw new HttpError(400, 'Upsert requires at least one unique column in the table');
  if (conflictTarget === undefined) {
    if (uniques.length === 1) return uniques[0];
    throw new HttpError(400, `The table has several unique columns: give conflictTarget (one of ${uniques.map((c) => c.name).join(', ')})`);
  }
  // By name, or by id as in the reference.
  const target = table.columns.find((c) => c.name === conflictTarget) ?? table.columns.find((c) => c.id === conflictTarget);
  if (!target) throw new HttpError(400, `Unknown column "${conflictTarget}" in conflictTarget`);
  if (!target.unique) {
    throw new HttpError(400, `conflictTarget "${target.name}" is not a unique column. Unique columns: ${uniques.map((c) => c.name).join(', ')}`);
  }
  return target;
}
