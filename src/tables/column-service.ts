import type { Actor } from '../accounts/service.js';
import { recordAudit } from '../audit/audit-log.js';
import type { Database, Queryable } from '../db/database.js';
import { HttpError } from '../http/errors.js';
import type { StorageGuard } from '../limits/storage.js';
import { CellError, type Column, type ColumnType, coerceCell, isNumeric, normalizeColumn } from './columns.js';
import { tableNotFound } from './errors.js';
import { TABLE_LIMITS } from './limits.js';
import type { PlannerStats } from './planner-stats.js';
import * as store from './store.js';
import { refuseLocked } from './table-locks.js';
import type { IdentifiedColumn, TableRow } from './store.js';
import * as rows from './table-rewrites.js';
import type { RowRewrite } from './table-rewrites.js';
import { type PublicColumn, publicColumn } from './wire-format.js';
import { mapColumnChangeError } from './write-errors.js';
import { type SelectOptionInput, sameOptions, selectCellText, singleOfMultiple } from './select-options.js';
import type { ScanMeter, WorkspaceGate } from '../limits/workspace-gate.js';

/**
 * Changing and deleting a column of a table with rows: rename, retype, flags and options, each applied to every
 * row, the column's indexes and the table's byte counter in one transaction under the table's lock (row writes
 * wait for it, and those validated against the old schema start over against the new one).
 */

export interface ColumnUpdates {
  name?: string;
  type?: ColumnType;
  required?: boolean;
  unique?: boolean;
  options?: SelectOptionInput[];
  multiple?: boolean;
  currencyCode?: string;
}

/**
 * Rows read and converted at a time when a column changes type, and their bytes at most (past the first row): the
 * conversion is insert's, in JavaScript, so a table of 50,000 rows, or of rows of 400 KiB, is read in slices
 * rather than into one array.
 */
const CONVERT_BATCH = { rows: 1000, bytes: 8 * 1024 * 1024 };

/**
 * Values already of the JSON type a column of this type stores are what converting them gives (text stays text,
 * and so on), so the conversion does not read them. Dates and selects check every value.
 */
const UNCHANGED_JSON_TYPE: Partial<Record<ColumnType, string>> = { string: 'string', number: 'number', currency: 'number', boolean: 'boolean' };

/** The index of the column a change names by its exact name or by its id; 404 when there is none. */
export function findColumnIndex(columns: IdentifiedColumn[], ref: string): number {
  let i = columns.findIndex((c) => c.name === ref);
  if (i < 0) i = columns.findIndex((c) => c.id === ref);
  if (i < 0) throw new HttpError(404, `Column "${ref}" not found`);
  return i;
}

function sameColumn(a: Column, b: Column): boolean {
  return a.name === b.name && a.type === b.type && a.required === b.required && a.unique === b.unique && sameOptions(a.options, b.options)
    && (a.multiple === true) === (b.multiple === true) && a.currencyCode === b.currencyCode;
}

/** The column as `updates` would leave it, validated like a new column; throws the 400 naming what is wrong. */
function changedColumn(table: TableRow, before: IdentifiedColumn, updates: ColumnUpdates): IdentifiedColumn {
  const type = updates.type ?? before.type;
  const typeChanged = type !== before.type;
  const next = normalizeColumn(
    {
      name: updates.name ?? before.name,
      type,
      required: updates.required ?? before.required,
      unique: updates.unique ?? before.unique,
      // A select column keeps its options unless new ones are given; another type has none.
      options: updates.options ?? (type === 'select' && !typeChanged ? before.options : undefined),
      multiple: updates.multiple ?? (type === 'select' && !typeChanged ? before.multiple : undefined),
      // A currency column keeps its code unless a new one is given (amounts are not converted: only their label).
      currencyCode: updates.currencyCode ?? (type === 'currency' && !typeChanged ? before.currencyCode : undefined),
    },
    // A unique select column from before they were refused may be renamed or given options, not made one anew.
    // Options given without ids keep the ids of those of the same name (a rename by name alone makes a new option).
    { keepUniqueSelect: updates.unique === undefined && !typeChanged, previousOptions: before.type === 'select' ? before.options : undefined },
  );
  if (next.name !== before.name && table.columns.some((c) => c !== before && c.name.toLowerCase() === next.name.toLowerCase())) {
    throw new HttpError(400, `Column "${next.name}" already exists`);
  }
  if (next.unique && !before.unique && table.columns.filter((c) => c.unique).length >= TABLE_LIMITS.maxUniqueColumns) {
    throw new HttpError(400, `A table can have at most ${TABLE_LIMITS.maxUniqueColumns} unique columns`);
  }
  // Indexes of a new number or date type are built in the transaction that converts the rows: see Column.guarded.
  const guarded = before.guarded === true || (typeChanged && (isNumeric(type) || type === 'date'));
  return { ...next, id: before.id, ...(guarded ? { guarded: true } : {}) };
}

/** Whether existing values must go through the new definition's conversion. */
function needsConversion(before: Column, after: Column): boolean {
  // A select column's cells become its options' names (json: as they are otherwise).
  if (after.type === 'json') return before.type === 'select';
  if (after.type !== before.type) return true;
  if (after.type !== 'select') return false;
  // A list of options to one or back; options removed: the ids cells hold must be among the new ones (or name one).
  return (before.multiple === true) !== (after.multiple === true) || !(before.options ?? []).every((o) => after.options?.some((n) => n.id === o.id));
}

/**
 * How a value of `before` converts to `after`: with insert's rules, but a select cell's option names (not the ids
 * it holds) go to another type, and a list of options to a single select only when it holds one at most.
 */
function converter(before: Column, after: Column): (v: unknown) => unknown {
  if (before.type === 'select' && after.type !== 'select') {
    return (v) => {
      if (Array.isArray(v) && v.length === 0 && after.type !== 'json') {
        // A list of no options is no value.
        if (after.required) throw new CellError('holds no option, and the column is required');
        return null;
      }
      return coerceCell(after, selectCellText(before, v, after.type === 'json'));
    };
  }
  if (before.type === 'select' && after.type === 'select' && before.multiple && !after.multiple) {
    return (v) => {
      const r = singleOfMultiple(after, v);
      if ('error' in r) throw new CellError(r.error);
      return r.value;
    };
  }
  return (v) => coerceCell(after, v);
}

/** What changed, for the audit entry. */
function changesOf(before: Column, after: Column): Record<string, unknown> {
  const changes: Record<string, unknown> = {};
  if (after.name !== before.name) changes.name = { from: before.name, to: after.name };
  if (after.type !== before.type) changes.type = { from: before.type, to: after.type };
  if (after.required !== before.required) changes.required = after.required;
  if (after.unique !== before.unique) changes.unique = after.unique;
  if (!sameOptions(before.options, after.options)) changes.options = after.options ?? null;
  if ((after.multiple === true) !== (before.multiple === true)) changes.multiple = after.multiple === true;
  if (after.currencyCode !== before.currencyCode) changes.currencyCode = after.currencyCode ?? null;
  return changes;
}

class RewriteTotals implements RowRewrite {
  rows = 0;
  bytesAdded = 0;
  maxBytes = 0;

  add(r: RowRewrite): void {
    this.rows += r.rows;
    this.bytesAdded += r.bytesAdded;
    this.maxBytes = Math.max(this.maxBytes, r.maxBytes);
  }
}

export interface ColumnServiceDeps {
  stats: PlannerStats;
  /** The workspace's scans: a change that rewrites every row takes a place among them and is charged its time. */
  gate: WorkspaceGate;
  /** Checks the workspace's storage when a change makes rows larger. */
  storage?: StorageGuard;
}

/**
 * A change that rewrites every row holds the database for as long as the table is large (on the embedded
 * database about 2 s to rename and 4 s to retype a column of 50,000 rows), like deleting a table. It is not
 * bounded by the query timeout, which would leave a large table's columns unchangeable; but a tenant may repeat
 * it, so it runs as one of the workspace's scans and its time is charged to the workspace's budget of database
 * time (docs/architecture.md, Tables: bounded statements): renames sent back to back are refused (429) once they
 * held the database past that budget, as queries are.
 */
/** The table a column change locks and rewrites: found in the workspace (404) and not schema-locked (423). */
async function schemaToChange(q: Queryable, meter: ScanMeter, workspaceId: string, tableId: string): Promise<TableRow> {
  const table = await store.findTable(q, workspaceId, tableId, true);
  meter.holding();
  if (!table) throw tableNotFound();
  refuseLocked(table.locked, 'schema');
  return table;
}

export class ColumnService {
  constructor(
    private readonly db: Database,
    private readonly deps: ColumnServiceDeps,
  ) {}

  /** Changes a column (by name or id) and every row's value of it; returns the table's columns. */
  update(workspaceId: string, tableId: string, ref: string, updates: ColumnUpdates, actor: Actor = {}): Promise<PublicColumn[]> {
    if (!store.isTableId(tableId)) throw tableNotFound();
    return this.deps.gate.run(workspaceId, (meter) => this.updateHolding(meter, workspaceId, tableId, ref, updates, actor));
  }

  private async updateHolding(meter: ScanMeter, workspaceId: string, tableId: string, ref: string, updates: ColumnUpdates, actor: Actor): Promise<PublicColumn[]> {
    let target: Column | undefined;
    try {
      const { columns, rowsWritten } = await this.db.tx(async (q) => {
        const table = await schemaToChange(q, meter, workspaceId, tableId);
        const index = findColumnIndex(table.columns, ref);
        const before = table.columns[index];
        const after = changedColumn(table, before, updates);
        target = after;
        if (sameColumn(before, after)) return { columns: table.columns, rowsWritten: 0 };

        if (after.required && !before.required) {
          const missing = await rows.countRowsWithout(q, tableId, before.name);
          if (missing > 0) {
            throw new HttpError(400, `Cannot make column "${before.name}" required: ${missing} row(s) have no value for it`, { column: before.name });
          }
        }

        // The column's indexes are named after its name and built on its name and type: those the change does not
        // leave as they are go before the rows change (nothing to maintain meanwhile) and come back after.
        const existing = await store.tableIndexNames(q, tableId);
        const oldIndexes = store.columnIndexes(tableId, before);
        const newIndexes = store.columnIndexes(tableId, after);
        const kinds = ['unique', 'typed'] as const;
        const kept = (k: (typeof kinds)[number]) => oldIndexes[k] !== undefined && oldIndexes[k].sql === newIndexes[k]?.sql;
        for (const k of kinds) {
          const old = oldIndexes[k];
          if (old && !kept(k)) await store.dropIndex(q, old.name, existing);
        }

        const totals = new RewriteTotals();
        if (after.name !== before.name) totals.add(await rows.renameKey(q, tableId, before.name, after.name));
        if (needsConversion(before, after)) totals.add(await this.convertValues(q, tableId, before, after));
        if (totals.maxBytes > TABLE_LIMITS.maxRowBytes) {
          throw new HttpError(400, `Cannot change column "${before.name}": a row would exceed the row size limit (${totals.maxBytes} bytes > ${TABLE_LIMITS.maxRowBytes} bytes)`);
        }

        for (const k of kinds) {
          const spec = newIndexes[k];
          // A duplicate fails the unique index here (23505): mapColumnChangeError answers it.
          if (spec && !kept(k)) await store.createIndex(q, spec, k, existing);
        }
        await this.account(q, workspaceId, tableId, totals.bytesAdded);
        const updated = await store.setColumns(q, tableId, table.columns.map((c, i) => (i === index ? after : c)));
        await recordAudit(q, {
          workspaceId, actorId: actor.userId, actorKeyId: actor.keyId, actorType: actor.type, action: 'table.column_updated',
          resourceType: 'table', resourceId: tableId, resourceName: table.name,
          metadata: { columnId: before.id, column: before.name, changes: changesOf(before, after), rowsRewritten: totals.rows },
        });
        return { columns: updated.columns, rowsWritten: totals.rows };
      });
      this.deps.stats.noteRowChanges(rowsWritten);
      return columns.map(publicColumn);
    } catch (err) {
      throw mapColumnChangeError(err, target);
    }
  }

  /** Deletes a column (by name or id): its definition, its value in every row and its indexes. Returns the table's columns. */
  delete(workspaceId: string, tableId: string, ref: string, actor: Actor = {}): Promise<PublicColumn[]> {
    if (!store.isTableId(tableId)) throw tableNotFound();
    return this.deps.gate.run(workspaceId, (meter) => this.deleteHolding(meter, workspaceId, tableId, ref, actor));
  }

  private async deleteHolding(meter: ScanMeter, workspaceId: string, tableId: string, ref: string, actor: Actor): Promise<PublicColumn[]> {
    const { columns, rowsWritten } = await this.db.tx(async (q) => {
      const table = await schemaToChange(q, meter, workspaceId, tableId);
      const index = findColumnIndex(table.columns, ref);
      if (table.columns.length === 1) throw new HttpError(400, 'Cannot delete the last column in a table');
      const column = table.columns[index];
      await store.dropColumnIndexes(q, tableId, column, await store.tableIndexNames(q, tableId));
      const removed = await rows.removeKey(q, tableId, column.name);
      await this.account(q, workspaceId, tableId, removed.bytesAdded);
      const updated = await store.setColumns(q, tableId, table.columns.filter((_, i) => i !== index));
      await recordAudit(q, {
        workspaceId, actorId: actor.userId, actorKeyId: actor.keyId, actorType: actor.type, action: 'table.column_deleted',
        resourceType: 'table', resourceId: tableId, resourceName: table.name,
        metadata: { columnId: column.id, column: column.name, type: column.type, rowsRewritten: removed.rows },
      });
      return { columns: updated.columns, rowsWritten: removed.rows };
    });
    this.deps.stats.noteRowChanges(rowsWritten);
    return columns.map(publicColumn);
  }

  /** The table's byte counter (the workspace's storage) follows its rows; growth is checked against the plan. */
  private async account(q: Queryable, workspaceId: string, tableId: string, bytesAdded: number): Promise<void> {
    if (bytesAdded === 0) return;
    await store.adjustCounters(q, tableId, 0, bytesAdded);
    if (bytesAdded > 0) await this.deps.storage?.checkAfterWrite(q, workspaceId, bytesAdded);
  }

  /**
   * Converts every value of `column` (already under its new name) to its new definition (see `converter`), in
   * table order, a batch at a time; writes only values that change. A value that does not convert fails the
   * change with a 400 counting all such rows and naming one (as the caller named the column, its name before).
   */
  private async convertValues(q: Queryable, tableId: string, before: Column, column: Column): Promise<RowRewrite> {
    const label = before.name;
    const convert = converter(before, column);
    // A select column's cells hold ids: every one is read, to become its name.
    const skip = before.type === 'select' ? undefined : UNCHANGED_JSON_TYPE[column.type];
    const totals = new RewriteTotals();
    let incompatible = 0;
    let example: { rowId: string; value: unknown; reason: string } | undefined;
    for (let after: number | undefined = -1; after !== undefined;) {
      const batch = await rows.columnValues(q, tableId, column.name, after, CONVERT_BATCH.rows, CONVERT_BATCH.bytes, skip);
      after = batch.last;
      const changed: { id: string; v: unknown }[] = [];
      for (const row of batch.values) {
        try {
          const v = convert(row.v);
          // Scalars compare as they are; a list (or json) by its text. Null (a list of none to a single select) clears.
          if (typeof v === 'object' && v !== null ? JSON.stringify(v) !== JSON.stringify(row.v) : v !== row.v) changed.push({ id: row.id, v });
        } catch (err) {
          if (!(err instanceof CellError)) throw err;
          incompatible++;
          example ??= { rowId: row.id, value: row.v, reason: err.message };
        }
      }
      // Once one value failed the change fails: the rest are only counted.
      if (incompatible === 0) totals.add(await rows.setColumnValues(q, tableId, column.name, changed));
    }
    if (example) {
      const what = column.type !== 'select' ? column.type : before.multiple && !column.multiple && before.type === 'select' ? 'a single select' : 'its options';
      throw new HttpError(
        400,
        `Cannot change column "${label}" to ${what}: ${incompatible} row(s) have incompatible values (e.g. row ${example.rowId}: ${example.reason})`,
        {
          column: label,
          value: example.value,
          details: [{ code: 'incompatible_values', path: ['updates'], message: example.reason, rowId: example.rowId, incompatibleRows: incompatible }],
        },
      );
    }
    return totals;
  }
}
