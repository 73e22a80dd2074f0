import type { Actor } from '../accounts/service.js';
import { recordAudit } from '../audit/audit-log.js';
import type { Database, Queryable } from '../db/database.js';
import { HttpError } from '../http/errors.js';
import { newHexId } from '../ids.js';
import { type ColumnInput, isNumeric, normalizeColumn, normalizeColumns } from './columns.js';
import { requireTable, tableNotFound } from './errors.js';
import { NAME_PATTERN, TABLE_LIMITS, tablePlanLimits } from './limits.js';
import type { PlannerStats } from './planner-stats.js';
import * as store from './store.js';
import { applyLockChange, type PublicLocks, refuseLocked, setLocked } from './table-locks.js';
import { type PublicColumn, type PublicTable, publicColumn, publicTable } from './wire-format.js';
import { mapAddColumnError, mapCreateTableError } from './write-errors.js';

/** User tables and their schemas: create, list, get, delete, add a column, apply a plan. Scoped to a workspace per call. */

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

/** Unique columns each have an index on the shared rows relation: see TABLE_LIMITS.maxUniqueColumns. */
function checkUniqueColumns(count: number): void {
  if (count > TABLE_LIMITS.maxUniqueColumns) throw new HttpError(400, `A table can have at most ${TABLE_LIMITS.maxUniqueColumns} unique columns`);
}

export class TableService {
  constructor(
    private readonly db: Database,
    private readonly stats: PlannerStats,
  ) {}


  async get(workspaceId: string, tableId: string): Promise<PublicTable> {
    return publicTable(await requireTable(this.db, workspaceId, tableId));
  }

  async list(workspaceId: string): Promise<PublicTable[]> {
    return (await store.listTables(this.db, workspaceId)).map(publicTable);
  }

  /** The id of a table given by id or by name (the table block accepts both). */
  async resolveId(workspaceId: string, tableIdOrName: string): Promise<string> {
    if (store.isTableId(tableIdOrName)) return tableIdOrName;
    const t = await store.findTableByName(this.db, workspaceId, tableIdOrName);
    if (!t) throw tableNotFound();
    return t.id;
  }

  /** Creates a table within the plan's table cap; its rows-per-table cap is the plan's. */
  async create(scope: { workspaceId: string; plan: string }, input: CreateTableInput, actor: Actor = {}): Promise<PublicTable> {
    checkTableName(input.name);
    const description = input.description ?? '';
    if (description.length > TABLE_LIMITS.maxDescriptionLength) {
      throw new HttpError(400, `Description must be at most ${TABLE_LIMITS.maxDescriptionLength} characters`);
    }
    const columns = normalizeColumns(input.columns).map((c) => ({ ...c, id: newHexId('col_') }));
    checkUniqueColumns(columns.filter((c) => c.unique).length);
    const limits = tablePlanLimits(scope.plan);
    const id = newHexId('tbl_');
    try {
      const row = await this.db.tx(async (q) => {
        await store.lockWorkspaceTables(q, scope.workspaceId);
        const n = await store.countTables(q, scope.workspaceId);
        if (n >= limits.maxTables) throw new HttpError(403, `Workspace has reached maximum table limit (${limits.maxTables})`);
        const t = await store.insertTable(q, {
          id, workspaceId: scope.workspaceId, name: input.name, description, columns, maxRows: limits.maxRowsPerTable,
          createdBy: actor.userId ?? null,
        });
        const indexes = new Set<string>();
        for (const c of columns) await store.createColumnIndexes(q, id, c, indexes);
        await recordAudit(q, {
          workspaceId: scope.workspaceId, actorId: actor.userId, actorKeyId: actor.keyId, actorType: actor.type, action: 'table.created',
          resourceType: 'table', resourceId: id, resourceName: t.name, metadata: { columns: columns.length },
        });
        return t;
      });
      return publicTable(row);
    } catch (err) {
      throw mapCreateTableError(err, input.name);
    }
  }

  /** Deletes a table, its rows and its indexes. */
  async delete(workspaceId: string, tableId: string, actor: Actor = {}): Promise<void> {
    if (!store.isTableId(tableId)) throw tableNotFound();
    const rows = await this.db.tx(async (q) => {
      const t = await store.findTable(q, workspaceId, tableId, true);
      if (!t) throw tableNotFound();
      refuseLocked(t.locked, 'delete');
      await store.deleteTable(q, tableId);
      await store.dropTableIndexes(q, tableId);
      await recordAudit(q, {
        workspaceId, actorId: actor.userId, actorKeyId: actor.keyId, actorType: actor.type, action: 'table.deleted',
        resourceType: 'table', resourceId: tableId, resourceName: t.name, metadata: { rowCount: t.row_count },
      });
      return t.row_count;
    });
    this.stats.noteRowChanges(rows);
  }

  /** Adds a column (at `position`, default last) and its indexes. Returns the full column list. */
  async addColumn(workspaceId: string, tableId: string, input: ColumnInput, position?: number): Promise<PublicColumn[]> {
    if (!store.isTableId(tableId)) throw tableNotFound();
    const normalized = normalizeColumn(input);
    // The rows' versions from before a column of this name was deleted or renamed may still hold its old values
    // when the new column's index is built (Column.guarded).
    const guarded = isNumeric(normalized.type) || normalized.type === 'date';
    const column = { ...normalized, id: newHexId('col_'), ...(guarded ? { guarded } : {}) };
    try {
      const t = await this.db.tx(async (q) => {
        const table = await store.findTable(q, workspaceId, tableId, true);
        if (!table) throw tableNotFound();
        refuseLocked(table.locked, 'schema');
        if (table.columns.some((c) => c.name.toLowerCase() === column.name.toLowerCase())) {
          throw new HttpError(400, `Column "${column.name}" already exists`);
        }
        if (table.columns.length >= TABLE_LIMITS.maxColumns) {
          throw new HttpError(400, `Table has reached the maximum of ${TABLE_LIMITS.maxColumns} columns`);
        }
        if (column.unique) checkUniqueColumns(table.columns.filter((c) => c.unique).length + 1);
        if (column.required && table.row_count > 0) {
          throw new HttpError(400, `Cannot add required column "${column.name}": the table already has ${table.row_count} rows without a value for it`);
        }
        const columns = [...table.columns];
        columns.splice(position === undefined ? columns.length : Math.min(position, columns.length), 0, column);
        const updated = await store.setColumns(q, tableId, columns);
        await store.createColumnIndexes(q, tableId, column, await store.tableIndexNames(q, tableId));
        return updated;
      });
      return t.columns.map(publicColumn);
    } catch (err) {
      throw mapAddColumnError(err, column.name);
    }
  }

  /** Sets or lifts a table's write locks (the flags not named keep their state); audited. */
  async setLocks(workspaceId: string, tableId: string, change: Partial<PublicLocks>, actor: Actor = {}): Promise<PublicTable> {
    if (!store.isTableId(tableId)) throw tableNotFound();
    await this.db.tx(async (q) => {
      const t = await store.findTable(q, workspaceId, tableId, true);
      if (!t) throw tableNotFound();
      const locked = applyLockChange(t.locked, change);
      await setLocked(q, tableId, locked);
      await recordAudit(q, {
        workspaceId, actorId: actor.userId, actorKeyId: actor.keyId, actorType: actor.type, action: 'table.locks_changed',
        resourceType: 'table', resourceId: tableId, resourceName: t.name, metadata: { before: t.locked, after: locked },
      });
    });
    return this.get(workspaceId, tableId);
  }

  /** Applies a plan's rows-per-table limit to every table of a workspace (after its plan changed; `q` may be that transaction). */
  async applyPlan(workspaceId: string, plan: string, q: Queryable = this.db): Promise<void> {
    await store.setMaxRows(q, workspaceId, tablePlanLimits(plan).maxRowsPerTable);
  }
}
