// Shapes of the Tables API (/api/v1/tables) the page uses, and its calls.
import { apiFetch } from '../../api/client';

export type ColumnType = 'string' | 'number' | 'boolean' | 'date' | 'json' | 'select';
export const COLUMN_TYPES: ColumnType[] = ['string', 'number', 'boolean', 'date', 'json', 'select'];

export interface Column { name: string; type: ColumnType; required: boolean; unique: boolean; options?: string[] }
export interface Table {
  id: string; name: string; description: string; schema: { columns: Column[] };
  rowCount: number; maxRows: number; createdAt: string; updatedAt: string;
}
export interface TableRow { id: string; data: Record<string, unknown>; position: number; createdAt: string; updatedAt: string }
export interface RowPage {
  rows: TableRow[]; rowCount: number; totalCount: number; limit: number; offset: number;
  truncated: boolean; nextOffset: number | null; nextCursor: string | null;
}

interface Envelope<T> { success: true; data: T }

export async function listTables(workspaceId: string): Promise<Table[]> {
  const r = await apiFetch<Envelope<{ tables: Table[] }>>('/api/v1/tables', { query: { workspaceId } });
  return r.data.tables;
}

export async function getTable(workspaceId: string, tableId: string): Promise<Table> {
  const r = await apiFetch<Envelope<{ table: Table }>>(`/api/v1/tables/${encodeURIComponent(tableId)}`, { query: { workspaceId } });
  return r.data.table;
}

export interface RowQuery { filter?: Record<string, unknown>; sort?: Record<string, 'asc' | 'desc'>; limit: number; offset: number }

export async function queryRows(workspaceId: string, tableId: string, q: RowQuery): Promise<RowPage> {
  const query: Record<string, string> = { workspaceId, limit: String(q.limit), offset: String(q.offset) };
  if (q.filter && Object.keys(q.filter).length) query.filter = JSON.stringify(q.filter);
  if (q.sort && Object.keys(q.sort).length) query.sort = JSON.stringify(q.sort);
  const r = await apiFetch<Envelope<RowPage>>(`/api/v1/tables/${encodeURIComponent(tableId)}/rows`, { query });
  return r.data;
}

export async function updateRow(workspaceId: string, tableId: string, rowId: string, data: Record<string, unknown>): Promise<TableRow> {
  const r = await apiFetch<Envelope<{ row: TableRow }>>(`/api/v1/tables/${encodeURIComponent(tableId)}/rows/${encodeURIComponent(rowId)}`, {
    method: 'PATCH', body: { workspaceId, data },
  });
  return r.data.row;
}

export async function insertRows(workspaceId: string, tableId: string, rows: Record<string, unknown>[]): Promise<number> {
  const r = await apiFetch<Envelope<{ insertedCount: number }>>(`/api/v1/tables/${encodeURIComponent(tableId)}/rows`, {
    method: 'POST', body: { workspaceId, rows },
  });
  return r.data.insertedCount;
}

export async function deleteRow(workspaceId: string, tableId: string, rowId: string): Promise<void> {
  await apiFetch(`/api/v1/tables/${encodeURIComponent(tableId)}/rows/${encodeURIComponent(rowId)}`, { method: 'DELETE', query: { workspaceId } });
}

export async function addColumn(workspaceId: string, tableId: string, column: Omit<Column, 'required' | 'unique'> & { required?: boolean; unique?: boolean }): Promise<Column[]> {
  const r = await apiFetch<Envelope<{ columns: Column[] }>>(`/api/v1/tables/${encodeURIComponent(tableId)}/columns`, {
    method: 'POST', body: { workspaceId, column },
  });
  return r.data.columns;
}

export async function createTable(workspaceId: string, name: string, columns: Column[]): Promise<Table> {
  const r = await apiFetch<Envelope<{ table: Table }>>('/api/v1/tables', { method: 'POST', body: { workspaceId, name, schema: { columns } } });
  return r.data.table;
}

/** The page size the rows API allows at most; exports read the whole table in pages of this size. */
export const MAX_PAGE = 1000;

/** Every row matching the filter and sort, page by page (for CSV export). */
export async function allRows(workspaceId: string, tableId: string, q: Omit<RowQuery, 'limit' | 'offset'>): Promise<TableRow[]> {
  const out: TableRow[] = [];
  let offset: number | null = 0;
  while (offset !== null) {
    const page: RowPage = await queryRows(workspaceId, tableId, { ...q, limit: MAX_PAGE, offset });
    out.push(...page.rows);
    offset = page.nextOffset;
  }
  return out;
}
