import type { Database, Queryable } from '../db/database.js';
import type { TablesPort } from '../engine/index.js';
import type { StorageGuard, StorageSource } from '../limits/storage.js';
import { DEFAULT_QUERY_TIMEOUT_MS, QueryTimeout } from '../limits/query-timeout.js';
import { WorkspaceGate } from '../limits/workspace-gate.js';
import type { ColumnInput } from './columns.js';
import { ColumnService, type ColumnUpdates } from './column-service.js';
import { tablesEnginePort } from './engine-port.js';
import { TABLE_LIMITS } from './limits.js';
import { PlannerStats } from './planner-stats.js';
import {
  type DeleteResult, type Filter, type RowAnchor, type RowPage, type RowQuery, RowService, type RowUpdate, type UpsertResult,
} from './row-service.js';
import * as store from './store.js';
import type { Actor } from '../accounts/service.js';
import { type CreateTableInput, TableService } from './table-service.js';
import type { PublicLocks } from './table-locks.js';
import type { PublicColumn, PublicRow, PublicTable } from './wire-format.js';

/**
 * The Tables capability as one service, built by the composition root: tables (table-service.ts),
 * rows (row-service.ts, one write path), the table block's engine port (engine-port.ts) and the
 * storage source limits counts. Every method is scoped to one workspace.
 */

export type { Column, ColumnInput } from './columns.js';
export type { CreateTableInput } from './table-service.js';
export type { DeleteResult, Filter, RowAnchor, RowPage, RowQuery, RowUpdate, Sort, UpsertResult } from './row-service.js';
export type { ColumnUpdates } from './column-service.js';
export type { PublicColumn, PublicRow, PublicTable } from './wire-format.js';

export interface TablesServiceOptions {
  /** Refuses writes that take a workspace over its plan's storage (every area's bytes count). */
  storage: StorageGuard;
  /**
   * Bytes of row data one page of a row query returns at most (default TABLE_LIMITS.maxPageBytes,
   * 8 MiB; env WEFT_TABLE_PAGE_MAX_BYTES). A page stops early rather than pass it; see RowPage.
   */
  maxPageBytes?: number;
  /** For background failures (planner statistics). */
  log?: { warn(obj: object, msg: string): void };
  /** Shared with the other areas' scans: how many of a workspace's run at once (default: a gate of its own). */
  gate?: WorkspaceGate;
  /** How long a row query or a filtered write may hold the database (default 10 s; env WEFT_QUERY_TIMEOUT_MS). */
  queryTimeout?: QueryTimeout;
}

/** Bytes of row data stored in a workspace's tables: Tables' share of the workspace's storage. */
export const tableStorageBytes: StorageSource = { sql: store.WORKSPACE_BYTES_SQL };

export class TablesService {
  readonly tables: TableService;
  readonly columns: ColumnService;
  readonly rows: RowService;

  constructor(db: Database, options: TablesServiceOptions) {
    const maxPageBytes = options.maxPageBytes ?? TABLE_LIMITS.maxPageBytes;
    if (!Number.isSafeInteger(maxPageBytes) || maxPageBytes < 1) throw new Error(`maxPageBytes must be a positive integer, got ${maxPageBytes}`);
    const stats = new PlannerStats(db, options.log);
    const gate = options.gate ?? new WorkspaceGate();
    this.tables = new TableService(db, stats);
    this.columns = new ColumnService(db, { stats, gate, storage: options.storage });
    this.rows = new RowService(db, {
      storage: options.storage, stats, maxPageBytes, gate, queryTimeout: options.queryTimeout ?? new QueryTimeout(DEFAULT_QUERY_TIMEOUT_MS),
    });
  }

  // Tables

  createTable(scope: { workspaceId: string; plan: string }, input: CreateTableInput, actor?: Actor): Promise<PublicTable> {
    return this.tables.create(scope, input, actor);
  }

  listTables(workspaceId: string): Promise<PublicTable[]> {
    return this.tables.list(workspaceId);
  }

  getTable(workspaceId: string, tableId: string): Promise<PublicTable> {
    return this.tables.get(workspaceId, tableId);
  }

  deleteTable(workspaceId: string, tableId: string, actor?: Actor): Promise<void> {
    return this.tables.delete(workspaceId, tableId, actor);
  }

  /** Sets or lifts a table's write locks (workspace admins; the route checks the role). */
  setTableLocks(workspaceId: string, tableId: string, change: Partial<PublicLocks>, actor?: Actor): Promise<PublicTable> {
    return this.tables.setLocks(workspaceId, tableId, change, actor);
  }

  addColumn(workspaceId: string, tableId: string, input: ColumnInput, position?: number): Promise<PublicColumn[]> {
    return this.tables.addColumn(workspaceId, tableId, input, position);
  }

  /** Changes a column given by name or id (rename, type, flags, options), with every row's value of it. */
  updateColumn(workspaceId: string, tableId: string, column: string, updates: ColumnUpdates, actor?: Actor): Promise<PublicColumn[]> {
    return this.columns.update(workspaceId, tableId, column, updates, actor);
  }

  /** Deletes a column given by name or id, with its value in every row. */
  deleteColumn(workspaceId: string, tableId: string, column: string, actor?: Actor): Promise<PublicColumn[]> {
    return this.columns.delete(workspaceId, tableId, column, actor);
  }

  /** Applies a workspace's new plan to its tables (rows-per-table cap). Call when the plan changes. */
  applyPlan(workspaceId: string, plan: string, q?: Queryable): Promise<void> {
    return this.tables.applyPlan(workspaceId, plan, q);
  }

  // Rows

  insertRows(workspaceId: string, tableId: string, rows: Record<string, unknown>[], batch: boolean, anchor?: RowAnchor): Promise<PublicRow[]> {
    return this.rows.insertRows(workspaceId, tableId, rows, batch, anchor);
  }

  queryRows(workspaceId: string, tableId: string, query: RowQuery): Promise<RowPage> {
    return this.rows.queryRows(workspaceId, tableId, query);
  }

  getRow(workspaceId: string, tableId: string, rowId: string): Promise<PublicRow> {
    return this.rows.getRow(workspaceId, tableId, rowId);
  }

  updateRowsByFilter(workspaceId: string, tableId: string, filter: Filter, data: Record<string, unknown>, limit?: number): Promise<string[]> {
    return this.rows.updateRowsByFilter(workspaceId, tableId, filter, data, limit);
  }

  updateRowsById(workspaceId: string, tableId: string, updates: RowUpdate[]): Promise<string[]> {
    return this.rows.updateRowsById(workspaceId, tableId, updates);
  }

  updateRow(workspaceId: string, tableId: string, rowId: string, data: Record<string, unknown>): Promise<PublicRow> {
    return this.rows.updateRow(workspaceId, tableId, rowId, data);
  }

  deleteRows(workspaceId: string, tableId: string, target: { rowIds: string[] } | { filter: Filter; limit?: number }): Promise<DeleteResult> {
    return this.rows.deleteRows(workspaceId, tableId, target);
  }

  deleteRow(workspaceId: string, tableId: string, rowId: string): Promise<void> {
    return this.rows.deleteRow(workspaceId, tableId, rowId);
  }

  upsertRow(
    workspaceId: string,
    tableId: string,
    data: Record<string, unknown>,
    conflictTarget?: string,
  ): Promise<UpsertResult> {
    return this.rows.upsertRow(workspaceId, tableId, data, conflictTarget);
  }

  // Engine

  /**
   * The table block's port for a run in `workspaceId`. The plan is not needed: each table carries its
   * plan's row cap (set at creation and by applyPlan), and storage goes through the StorageGuard.
   */
  portFor(workspaceId: string, _plan: string): TablesPort {
    return tablesEnginePort(this.rows, (ws, idOrName) => this.tables.resolveId(ws, idOrName), workspaceId);
  }
}
