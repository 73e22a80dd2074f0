// Table: reads and writes rows of a workspace table through the tables port (ctx.ports.tables).
// Operations: query, get, insert, upsert, update, delete. References in every field (filter values,
// row data, ids, limits) are resolved by the engine like any config before the block runs.
import { z } from 'zod';
import { defineBlockType } from '../block-type.js';

// The port types live in ../ports.ts; re-exported here for existing importers.
export type { TableRowValue, TablesPort } from '../ports.js';

type JsonObject = Record<string, unknown>;

const OPERATIONS = ['query', 'get', 'insert', 'upsert', 'update', 'delete'] as const;

// Fields may hold references, which are strings until the run resolves them.
const objectOrRef = z.union([z.record(z.string(), z.unknown()), z.string()]);
const intOrRef = z.union([z.number().int(), z.string()]);

export const tableConfigSchema = z
  .strictObject({
    operation: z.enum(OPERATIONS),
    tableId: z.string().min(1),
    rowId: z.string().min(1).optional(),
    rowIds: z.union([z.array(z.string()), z.string()]).optional(),
    filter: objectOrRef.optional(),
    sort: objectOrRef.optional(),
    limit: intOrRef.optional(),
    offset: intOrRef.optional(),
    data: objectOrRef.optional(),
    rows: z.union([z.array(objectOrRef), z.string()]).optional(),
    conflictTarget: z.string().min(1).optional(),
  })
  .superRefine((c, ctx) => {
    const need = (ok: boolean, message: string) => {
      if (!ok) ctx.addIssue({ code: 'custom', message, path: [] });
    };
    switch (c.operation) {
      case 'get':
        need(c.rowId !== undefined, 'get needs rowId');
        break;
      case 'insert':
        need(c.data !== undefined || c.rows !== undefined, 'insert needs data or rows');
        break;
      case 'upsert':
        need(c.data !== undefined, 'upsert needs data');
        break;
      case 'update':
        need(c.data !== undefined, 'update needs data');
        need(c.rowId !== undefined || c.filter !== undefined, 'update needs rowId or filter');
        break;
      case 'delete':
        need(c.rowId !== undefined || c.rowIds !== undefined || c.filter !== undefined, 'delete needs rowId, rowIds or filter');
        break;
      case 'query':
        break;
    }
  });

export type TableConfig = z.infer<typeof tableConfigSchema>;

function asObject(value: unknown, field: string): JsonObject | undefined {
  if (value === undefined || value === null || value === '') return undefined;
  let v: unknown = value;
  if (typeof v === 'string') {
    try {
      v = JSON.parse(v) as unknown;
    } catch {
      throw new Error(`${field} must be an object (or JSON text of one)`);
    }
  }
  if (typeof v !== 'object' || v === null || Array.isArray(v)) throw new Error(`${field} must be an object`);
  return v as JsonObject;
}

function asInt(value: unknown, field: string): number | undefined {
  if (value === undefined || value === null || value === '') return undefined;
  const n = typeof value === 'string' ? Number(value.trim()) : value;
  if (typeof n !== 'number' || !Number.isInteger(n)) throw new Error(`${field} must be an integer`);
  return n;
}

function asId(value: unknown, field: string): string | undefined {
  if (value === undefined || value === null || value === '') return undefined;
  if (typeof value !== 'string') throw new Error(`${field} must be a string`);
  return value;
}

function asRows(value: unknown): JsonObject[] | undefined {
  if (value === undefined || value === null || value === '') return undefined;
  let v: unknown = value;
  if (typeof v === 'string') {
    try {
      v = JSON.parse(v) as unknown;
    } catch {
      throw new Error('rows must be an array of objects');
    }
  }
  if (!Array.isArray(v)) throw new Error('rows must be an array of objects');
  return v.map((r, i) => {
    const o = asObject(r, `rows[${i}]`);
    if (!o) throw new Error(`rows[${i}] must be an object`);
    return o;
  });
}

function asIdList(value: unknown): string[] | undefined {
  if (value === undefined || value === null || value === '') return undefined;
  let v: unknown = value;
  if (typeof v === 'string') {
    const t = v.trim();
    v = t.startsWith('[') ? (JSON.parse(t) as unknown) : [t];
  }
  if (!Array.isArray(v) || v.some((x) => typeof x !== 'string')) throw new Error('rowIds must be an array of strings');
  return v as string[];
}

export const tableBlock = defineBlockType<TableConfig>({
  type: 'table',
  config: tableConfigSchema,
  async run(ctx, config) {
    const port = ctx.ports.tables;
    if (!port) throw new Error('tables are not available in this context');
    const tableId = asId(config.tableId, 'tableId');
    if (!tableId) throw new Error('tableId is required');
    switch (config.operation) {
      case 'query': {
        const r = await port.query({
          tableId,
          filter: asObject(config.filter, 'filter'),
          sort: asObject(config.sort, 'sort'),
          limit: asInt(config.limit, 'limit'),
          offset: asInt(config.offset, 'offset'),
        });
        return { output: { rows: r.rows, rowCount: r.rows.length, totalCount: r.totalCount, limit: r.limit, offset: r.offset } };
      }
      case 'get': {
        const rowId = asId(config.rowId, 'rowId');
        if (!rowId) throw new Error('rowId is required');
        return { output: { row: await port.get({ tableId, rowId }) } };
      }
      case 'insert': {
        const rows = asRows(config.rows);
        if (rows) {
          const r = await port.insert({ tableId, rows });
          return { output: { rows: r.rows, insertedCount: r.rows.length } };
        }
        const data = asObject(config.data, 'data');
        if (!data) throw new Error('insert needs data or rows');
        const r = await port.insert({ tableId, data });
        return { output: { row: r.rows[0] } };
      }
      case 'upsert': {
        const data = asObject(config.data, 'data');
        if (!data) throw new Error('upsert needs data');
        const r = await port.upsert({ tableId, data, conflictTarget: asId(config.conflictTarget, 'conflictTarget') });
        return { output: { row: r.row, operation: r.operation } };
      }
      case 'update': {
        const data = asObject(config.data, 'data');
        if (!data) throw new Error('update needs data');
        const rowId = asId(config.rowId, 'rowId');
        const filter = asObject(config.filter, 'filter');
        if (!rowId && !filter) throw new Error('update needs rowId or filter');
        const r = await port.update({ tableId, rowId, filter: rowId ? undefined : filter, data, limit: asInt(config.limit, 'limit') });
        return { output: { updatedCount: r.updatedRowIds.length, updatedRowIds: r.updatedRowIds } };
      }
      case 'delete': {
        const rowId = asId(config.rowId, 'rowId');
        const rowIds = asIdList(config.rowIds);
        const filter = asObject(config.filter, 'filter');
        if (!rowId && !rowIds && !filter) throw new Error('delete needs rowId, rowIds or filter');
        const r = rowId || rowIds
          ? await port.delete({ tableId, rowId, rowIds })
          : await port.delete({ tableId, filter, limit: asInt(config.limit, 'limit') });
        return { output: { deletedCount: r.deletedRowIds.length, deletedRowIds: r.deletedRowIds } };
      }
    }
  },
});
