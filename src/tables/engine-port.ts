import type { TablesPort } from '../engine/index.js';
import type { RowService } from './row-service.js';

/**
 * The `table` block's port for one workspace, over the row service. `tableId` may also be the table's
 * name. Errors are the service's own (HttpError): the block reports their message.
 */
export function tablesEnginePort(
  rows: RowService,
  resolveTableId: (workspaceId: string, tableIdOrName: string) => Promise<string>,
  workspaceId: string,
): TablesPort {
  const resolve = (tableIdOrName: string) => resolveTableId(workspaceId, tableIdOrName);
  return {
    async query(args) {
      return rows.queryRows(workspaceId, await resolve(args.tableId), args);
    },
    async get(args) {
      return rows.getRow(workspaceId, await resolve(args.tableId), args.rowId);
    },
    async insert(args) {
      const tableId = await resolve(args.tableId);
      if (args.rows) return { rows: await rows.insertRows(workspaceId, tableId, args.rows, true) };
      return { rows: await rows.insertRows(workspaceId, tableId, [args.data ?? {}], false) };
    },
    async upsert(args) {
      return rows.upsertRow(workspaceId, await resolve(args.tableId), args.data, args.conflictTarget);
    },
    async update(args) {
      const tableId = await resolve(args.tableId);
      if (args.rowId !== undefined) {
        const row = await rows.updateRow(workspaceId, tableId, args.rowId, args.data);
        return { updatedRowIds: [row.id] };
      }
      return { updatedRowIds: await rows.updateRowsByFilter(workspaceId, tableId, args.filter ?? {}, args.data, args.limit) };
    },
    async delete(args) {
      const tableId = await resolve(args.tableId);
      if (args.rowId !== undefined) {
        await rows.deleteRow(workspaceId, tableId, args.rowId);
        return { deletedRowIds: [args.rowId] };
      }
      if (args.rowIds !== undefined) {
        return { deletedRowIds: (await rows.deleteRows(workspaceId, tableId, { rowIds: args.rowIds })).deletedRowIds };
      }
      return { deletedRowIds: (await rows.deleteRows(workspaceId, tableId, { filter: args.filter ?? {}, limit: args.limit })).deletedRowIds };
    },
  };
}
