import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { actorOf, type AccessControlled } from '../accounts/service.js';
import { HttpError } from '../http/errors.js';
import { errorSchema } from '../http/schemas.js';
import { queryFlag } from '../http/query-params.js';
import { filterErrorToHttp } from './errors.js';
import { parseJsonObjectParam } from './filter-sql.js';
import { TABLE_LIMITS } from './limits.js';
import {
  batchLimit, column, columnInput, columnRef, columnUpdates, errorResponses, filterObject, ok, optionalWorkspaceBody, optionalWorkspaceQuery, queryErrors, row, rowData,
  rowPage, rowParams, rowsQuery, table, tableLocks, tableParams, workspaceId, workspaceQuery, writeErrors, filteredWriteErrors,
} from './schemas.js';
import type { TablesService } from './service.js';

/** HTTP surface of Tables: parse, authorize, shape. Logic lives in the TablesService it is given. */

/** workspaceId from the query or the body (DELETE routes accept both). */
function workspaceOf(query: { workspaceId?: string }, body: unknown): string {
  const fromBody = body && typeof body === 'object' && 'workspaceId' in body ? (body as { workspaceId?: unknown }).workspaceId : undefined;
  const q = query.workspaceId;
  if (typeof fromBody === 'string' && q !== undefined && fromBody !== q) {
    throw new HttpError(400, 'workspaceId in the query and in the body differ');
  }
  const id = q ?? (typeof fromBody === 'string' ? fromBody : undefined);
  if (!id) throw new HttpError(400, 'workspaceId is required (query parameter or body field)');
  return id;
}

/** The `filter` / `sort` query parameter as an object; malformed JSON is a 400. */
function jsonParam(text: string | undefined, what: 'filter' | 'sort'): Record<string, unknown> | undefined {
  try {
    return parseJsonObjectParam(text, what);
  } catch (err) {
    throw filterErrorToHttp(err);
  }
}

/** The Tables routes over `service`; `accounts` checks each caller's access to the workspace. */
export function tableRoutes(service: TablesService, accounts: AccessControlled): FastifyPluginAsyncZod {
  return async (app) => {
    const tags = ['tables'];

    app.post('/api/v1/tables', {
      schema: {
        tags, summary: 'Create a table',
        body: z.object({
          workspaceId,
          name: z.string().min(1).max(TABLE_LIMITS.maxTableNameLength).describe('Letters, digits and underscores; unique in the workspace'),
          description: z.string().max(TABLE_LIMITS.maxDescriptionLength).nullable().optional(),
          schema: z.object({ columns: z.array(columnInput).min(1).max(TABLE_LIMITS.maxColumns) }),
        }),
        response: { 200: ok(z.object({ table, message: z.string() })), ...errorResponses },
      },
    }, async (request) => {
      const access = await accounts.authorize(request.auth, request.body.workspaceId, 'write');
      const created = await service.createTable({ workspaceId: access.workspaceId, plan: access.plan },
        { name: request.body.name, description: request.body.description, columns: request.body.schema.columns },
        actorOf(access),
      );
      return { success: true as const, data: { table: created, message: 'Table created successfully' } };
    });

    app.get('/api/v1/tables', {
      schema: {
        tags, summary: 'List the tables of a workspace',
        querystring: workspaceQuery,
        response: { 200: ok(z.object({ tables: z.array(table), totalCount: z.number().int() })), ...errorResponses },
      },
    }, async (request) => {
      const access = await accounts.authorize(request.auth, request.query.workspaceId, 'read');
      const tables = await service.listTables(access.workspaceId);
      return { success: true as const, data: { tables, totalCount: tables.length } };
    });

    app.get('/api/v1/tables/:tableId', {
      schema: {
        tags, summary: 'Get a table and its schema',
        params: tableParams,
        querystring: workspaceQuery,
        response: { 200: ok(z.object({ table })), ...errorResponses },
      },
    }, async (request) => {
      const access = await accounts.authorize(request.auth, request.query.workspaceId, 'read');
      return { success: true as const, data: { table: await service.getTable(access.workspaceId, request.params.tableId) } };
    });

    app.delete('/api/v1/tables/:tableId', {
      schema: {
        tags, summary: 'Delete a table and all its rows (irreversible)',
        params: tableParams,
        querystring: optionalWorkspaceQuery,
        body: optionalWorkspaceBody,
        response: { 200: ok(z.object({ message: z.string() })), ...errorResponses, 423: errorSchema },
      },
    }, async (request) => {
      const access = await accounts.authorize(request.auth, workspaceOf(request.query, request.body), 'write');
      await service.deleteTable(access.workspaceId, request.params.tableId, actorOf(access));
      return { success: true as const, data: { message: 'Table deleted successfully' } };
    });

    app.patch('/api/v1/tables/:tableId', {
      schema: {
        tags, summary: "Lock or unlock a table's writes (workspace admins); flags not given keep their state",
        params: tableParams,
        body: z.strictObject({
          workspaceId,
          locks: tableLocks.partial().strict().refine((l) => Object.keys(l).length > 0, { message: 'locks must name at least one flag' }),
        }),
        response: { 200: ok(z.object({ table })), ...errorResponses },
      },
    }, async (request) => {
      const access = await accounts.authorize(request.auth, request.body.workspaceId, 'admin');
      return { success: true as const, data: { table: await service.setTableLocks(access.workspaceId, request.params.tableId, request.body.locks, actorOf(access)) } };
    });

    app.post('/api/v1/tables/:tableId/columns', {
      schema: {
        tags, summary: 'Add a column; returns all columns',
        params: tableParams,
        body: z.object({
          workspaceId,
          column: columnInput.extend({
            position: z.number().int().min(0).optional().describe('Index to insert the column at (default: last)'),
          }),
        }),
        response: { 200: ok(z.object({ columns: z.array(column) })), ...writeErrors },
      },
    }, async (request) => {
      const access = await accounts.authorize(request.auth, request.body.workspaceId, 'write');
      const { position, ...col } = request.body.column;
      const columns = await service.addColumn(access.workspaceId, request.params.tableId, col, position);
      return { success: true as const, data: { columns } };
    });

    app.patch('/api/v1/tables/:tableId/columns', {
      schema: {
        tags, summary: 'Change a column (rename, type, required, unique, options) and every row with it; returns all columns',
        params: tableParams,
        body: z.strictObject({ workspaceId, columnName: columnRef, updates: columnUpdates }),
        response: { 200: ok(z.object({ columns: z.array(column) })), ...writeErrors },
      },
    }, async (request) => {
      const access = await accounts.authorize(request.auth, request.body.workspaceId, 'write');
      const { columnName, updates } = request.body;
      const columns = await service.updateColumn(access.workspaceId, request.params.tableId, columnName, updates, actorOf(access));
      return { success: true as const, data: { columns } };
    });

    app.delete('/api/v1/tables/:tableId/columns', {
      schema: {
        tags, summary: 'Delete a column and its value in every row; returns the remaining columns',
        params: tableParams,
        querystring: optionalWorkspaceQuery,
        body: z.object({ workspaceId: workspaceId.optional(), columnName: columnRef }),
        response: { 200: ok(z.object({ columns: z.array(column) })), ...writeErrors },
      },
    }, async (request) => {
      const access = await accounts.authorize(request.auth, workspaceOf(request.query, request.body), 'write');
      const columns = await service.deleteColumn(access.workspaceId, request.params.tableId, request.body.columnName, actorOf(access));
      return { success: true as const, data: { columns } };
    });

    app.get('/api/v1/tables/:tableId/rows', {
      schema: {
        tags, summary: 'Query rows with an optional filter, sort and offset pagination',
        params: tableParams,
        querystring: rowsQuery,
        response: {
          200: ok(rowPage),
          ...queryErrors,
        },
      },
    }, async (request) => {
      const { filter, sort, limit, offset } = request.query;
      const parsedFilter = jsonParam(filter, 'filter');
      const parsedSort = jsonParam(sort, 'sort');
      const includeTotal = queryFlag('includeTotal', request.query.includeTotal) ?? true;
      const access = await accounts.authorize(request.auth, request.query.workspaceId, 'read');
      const r = await service.queryRows(access.workspaceId, request.params.tableId, { filter: parsedFilter, sort: parsedSort, limit, offset, includeTotal });
      // A page holds at most `limit` rows and at most the service's page byte budget of row data (at least
      // one row): cut short, it says `truncated`. The client pages on from `nextOffset` (= offset + rowCount)
      // until `nextOffset` (and `nextCursor`, as in the reference) is null.
      return {
        success: true as const,
        data: {
          rows: r.rows, rowCount: r.rows.length, totalCount: r.totalCount, limit: r.limit, offset: r.offset,
          truncated: r.truncated, nextOffset: r.nextOffset, nextCursor: r.nextOffset === null ? null : String(r.nextOffset),
        },
      };
    });

    app.post('/api/v1/tables/:tableId/rows', {
      // Each cell and filter operand is checked where it is coerced, naming its column (columns.ts).
      config: { checksStorableText: true },
      schema: {
        tags, summary: 'Insert one row (data) or a batch (rows, 1 to 1000), all or nothing',
        params: tableParams,
        body: z.object({
          workspaceId,
          data: rowData.optional().describe('One row'),
          rows: z.array(rowData).min(1).max(TABLE_LIMITS.maxBatch).optional().describe('A batch of rows; wins over data'),
          afterRowId: z.string().min(1).max(128).optional().describe('With data: place the row right after this row (the rows after it move on one place)'),
          beforeRowId: z.string().min(1).max(128).optional().describe('With data: place the row right before this row (it and the rows after it move on one place)'),
        }),
        response: {
          200: ok(z.union([
            z.object({ row, message: z.string() }),
            z.object({ rows: z.array(row), insertedCount: z.number().int(), message: z.string() }),
          ])),
          ...writeErrors,
        },
      },
    }, async (request) => {
      const { rows, data, afterRowId, beforeRowId } = request.body;
      if (rows === undefined && data === undefined) throw new HttpError(400, 'Provide data (one row) or rows (a batch of rows)');
      // As in the reference, the anchors belong to the single form: a batch (which wins) goes at the end.
      if (rows === undefined && afterRowId !== undefined && beforeRowId !== undefined) {
        throw new HttpError(400, 'afterRowId and beforeRowId are mutually exclusive');
      }
      const access = await accounts.authorize(request.auth, request.body.workspaceId, 'write');
      if (rows !== undefined) {
        const inserted = await service.insertRows(access.workspaceId, request.params.tableId, rows, true);
        return {
          success: true as const,
          data: { rows: inserted, insertedCount: inserted.length, message: `Successfully inserted ${inserted.length} rows` },
        };
      }
      const anchor = afterRowId !== undefined ? { rowId: afterRowId, side: 'after' as const }
        : beforeRowId !== undefined ? { rowId: beforeRowId, side: 'before' as const } : undefined;
      const [inserted] = await service.insertRows(access.workspaceId, request.params.tableId, [data ?? {}], false, anchor);
      return { success: true as const, data: { row: inserted, message: 'Row inserted successfully' } };
    });

    app.put('/api/v1/tables/:tableId/rows', {
      // Each cell and filter operand is checked where it is coerced, naming its column (columns.ts).
      config: { checksStorableText: true },
      schema: {
        tags, summary: 'Update every row matching a filter (data is merged into each row)',
        params: tableParams,
        body: z.object({
          workspaceId,
          filter: filterObject,
          data: rowData.describe('Values to set; null clears a column'),
          limit: batchLimit.optional().describe('Update only the first N matching rows in table order'),
        }),
        response: {
          200: ok(z.object({ message: z.string(), updatedCount: z.number().int(), updatedRowIds: z.array(z.string()) })),
          ...filteredWriteErrors,
        },
      },
    }, async (request) => {
      const access = await accounts.authorize(request.auth, request.body.workspaceId, 'write');
      const { filter, data, limit } = request.body;
      const ids = await service.updateRowsByFilter(access.workspaceId, request.params.tableId, filter, data, limit);
      return {
        success: true as const,
        data: {
          message: ids.length > 0 ? 'Rows updated successfully' : 'No rows matched the filter criteria',
          updatedCount: ids.length,
          updatedRowIds: ids,
        },
      };
    });

    app.patch('/api/v1/tables/:tableId/rows', {
      // Each cell and filter operand is checked where it is coerced, naming its column (columns.ts).
      config: { checksStorableText: true },
      schema: {
        tags, summary: 'Update several rows by id (each patch is merged into its row), all or nothing',
        params: tableParams,
        body: z.object({
          workspaceId,
          updates: z.array(z.object({ rowId: z.string().min(1).max(128), data: rowData })).min(1).max(TABLE_LIMITS.maxBatch),
        }),
        response: {
          200: ok(z.object({ message: z.string(), updatedCount: z.number().int(), updatedRowIds: z.array(z.string()) })),
          ...writeErrors,
        },
      },
    }, async (request) => {
      const access = await accounts.authorize(request.auth, request.body.workspaceId, 'write');
      const ids = await service.updateRowsById(access.workspaceId, request.params.tableId, request.body.updates);
      return { success: true as const, data: { message: 'Rows updated successfully', updatedCount: ids.length, updatedRowIds: ids } };
    });

    app.delete('/api/v1/tables/:tableId/rows', {
      schema: {
        tags, summary: 'Delete rows by id (rowIds) or by filter',
        params: tableParams,
        querystring: optionalWorkspaceQuery,
        body: z.object({
          workspaceId: workspaceId.optional(),
          rowIds: z.array(z.string().min(1).max(128)).min(1).max(TABLE_LIMITS.maxBatch).optional(),
          filter: filterObject.optional(),
          limit: batchLimit.optional().describe('With filter: delete only the first N matching rows in table order'),
        }),
        response: {
          200: ok(z.object({
            message: z.string(),
            deletedCount: z.number().int(),
            deletedRowIds: z.array(z.string()),
            requestedCount: z.number().int().optional(),
            missingRowIds: z.array(z.string()).optional(),
          })),
          ...filteredWriteErrors,
        },
      },
    }, async (request) => {
      const { rowIds, filter, limit } = request.body;
      if ((rowIds === undefined) === (filter === undefined)) throw new HttpError(400, 'Provide either filter or rowIds, but not both');
      const access = await accounts.authorize(request.auth, workspaceOf(request.query, request.body), 'write');
      if (rowIds !== undefined) {
        const r = await service.deleteRows(access.workspaceId, request.params.tableId, { rowIds });
        const n = r.deletedRowIds.length;
        return {
          success: true as const,
          data: {
            message: n > 0 ? `Successfully deleted ${n} rows` : 'No matching rows found for the provided IDs',
            deletedCount: n,
            deletedRowIds: r.deletedRowIds,
            requestedCount: new Set(rowIds).size,
            ...(r.missingRowIds ? { missingRowIds: r.missingRowIds } : {}),
          },
        };
      }
      const r = await service.deleteRows(access.workspaceId, request.params.tableId, { filter: filter ?? {}, limit });
      const n = r.deletedRowIds.length;
      return {
        success: true as const,
        data: { message: n > 0 ? `Successfully deleted ${n} rows` : 'No rows matched the filter criteria', deletedCount: n, deletedRowIds: r.deletedRowIds },
      };
    });

    app.post('/api/v1/tables/:tableId/rows/upsert', {
      // Each cell and filter operand is checked where it is coerced, naming its column (columns.ts).
      config: { checksStorableText: true },
      schema: {
        tags, summary: 'Insert a row, or replace the row whose unique conflictTarget column holds the same value',
        params: tableParams,
        body: z.object({
          workspaceId,
          data: rowData,
          conflictTarget: z.string().min(1).max(128).optional().describe('A unique column; optional when the table has exactly one'),
        }),
        response: {
          200: ok(z.object({ row, operation: z.enum(['insert', 'update']), message: z.string() })),
          ...writeErrors,
        },
      },
    }, async (request) => {
      const access = await accounts.authorize(request.auth, request.body.workspaceId, 'write');
      const r = await service.upsertRow(access.workspaceId, request.params.tableId, request.body.data, request.body.conflictTarget);
      return {
        success: true as const,
        data: { row: r.row, operation: r.operation, message: r.operation === 'insert' ? 'Row inserted successfully' : 'Row updated successfully' },
      };
    });

    app.get('/api/v1/tables/:tableId/rows/:rowId', {
      schema: {
        tags, summary: 'Get one row',
        params: rowParams,
        querystring: workspaceQuery,
        response: { 200: ok(z.object({ row })), ...errorResponses },
      },
    }, async (request) => {
      const access = await accounts.authorize(request.auth, request.query.workspaceId, 'read');
      return { success: true as const, data: { row: await service.getRow(access.workspaceId, request.params.tableId, request.params.rowId) } };
    });

    app.patch('/api/v1/tables/:tableId/rows/:rowId', {
      // Each cell and filter operand is checked where it is coerced, naming its column (columns.ts).
      config: { checksStorableText: true },
      schema: {
        tags, summary: 'Update one row (data is merged into the row)',
        params: rowParams,
        body: z.object({ workspaceId, data: rowData.describe('Values to set; null clears a column') }),
        response: { 200: ok(z.object({ row, message: z.string() })), ...writeErrors },
      },
    }, async (request) => {
      const access = await accounts.authorize(request.auth, request.body.workspaceId, 'write');
      const updated = await service.updateRow(access.workspaceId, request.params.tableId, request.params.rowId, request.body.data);
      return { success: true as const, data: { row: updated, message: 'Row updated successfully' } };
    });

    app.delete('/api/v1/tables/:tableId/rows/:rowId', {
      schema: {
        tags, summary: 'Delete one row',
        params: rowParams,
        querystring: optionalWorkspaceQuery,
        body: optionalWorkspaceBody,
        response: { 200: ok(z.object({ message: z.string(), deletedCount: z.number().int() })), ...errorResponses, 423: errorSchema },
      },
    }, async (request) => {
      const access = await accounts.authorize(request.auth, workspaceOf(request.query, request.body), 'write');
      await service.deleteRow(access.workspaceId, request.params.tableId, request.params.rowId);
      return { success: true as const, data: { message: 'Row deleted successfully', deletedCount: 1 } };
    });
  };
}
