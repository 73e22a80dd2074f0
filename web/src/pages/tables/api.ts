// The Tables API (/api/v1/tables) calls the page makes; the shapes come from the generated API schema.
import { api } from '../../api/client';
import type { DataOf, RequestBody } from '../../api/schema';

export type Table = DataOf<'/api/v1/tables/{tableId}'>['table'];
export type TableLocks = Table['locks'];
export type Column = Table['schema']['columns'][number];
export type ColumnType = Column['type'];
export type RowPage = DataOf<'/api/v1/tables/{tableId}/rows'>;
export type TableRow = RowPage['rows'][number];
/** A column as a client defines it (no id yet: the server gives one). */
export type NewColumn = RequestBody<'/api/v1/tables/{tableId}/columns', 'post'>['column'];

export const COLUMN_TYPES: ColumnType[] = ['string', 'number', 'currency', 'boolean', 'date', 'json', 'select'];

/** Types whose cells are numbers (a currency column is a number column that names its currency). */
export const isNumeric = (type: ColumnType | undefined): boolean => type === 'number' || type === 'currency';

/** The name of the option a select cell's id stands for (the id itself when no option has it). */
export function optionName(col: Column, id: unknown): string {
  const found = col.options?.find((o) => o.id === id);
  return found ? found.name : typeof id === 'string' ? id : JSON.stringify(id) ?? '';
}

/** What a select cell shows: its option's name, or the names of its list joined with ", ". */
export function selectText(col: Column, value: unknown): string {
  if (value === null || value === undefined) return '';
  return Array.isArray(value) ? value.map((id) => optionName(col, id)).join(', ') : optionName(col, value);
}

export async function listTables(workspaceId: string): Promise<Table[]> {
  const r = await api('/api/v1/tables', { query: { workspaceId } });
  return r.data.tables;
}

export async function getTable(workspaceId: string, tableId: string): Promise<Table> {
  const r = await api('/api/v1/tables/{tableId}', { params: { tableId }, query: { workspaceId } });
  return r.data.table;
}

export interface RowQuery { filter?: Record<string, unknown>; sort?: Record<string, 'asc' | 'desc'>; limit: number; offset: number }

export async function queryRows(workspaceId: string, tableId: string, q: RowQuery): Promise<RowPage> {
  const query: Record<string, string> = { workspaceId, limit: String(q.limit), offset: String(q.offset) };
  if (q.filter && Object.keys(q.filter).length) query.filter = JSON.stringify(q.filter);
  if (q.sort && Object.keys(q.sort).length) query.sort = JSON.stringify(q.sort);
  const r = await api('/api/v1/tables/{tableId}/rows', { params: { tableId }, query });
  return r.data;
}

export async function updateRow(workspaceId: string, tableId: string, rowId: string, data: Record<string, unknown>): Promise<TableRow> {
  const r = await api('/api/v1/tables/{tableId}/rows/{rowId}', { method: 'patch', params: { tableId, rowId }, body: { workspaceId, data } });
  return r.data.row;
}

export async function insertRows(workspaceId: string, tableId: string, rows: Record<string, unknown>[]): Promise<number> {
  const r = await api('/api/v1/tables/{tableId}/rows', { method: 'post', params: { tableId }, body: { workspaceId, rows } });
  // a one-row body answers with that row; a batch with its count
  return 'insertedCount' in r.data ? r.data.insertedCount : 1;
}

export async function deleteRow(workspaceId: string, tableId: string, rowId: string): Promise<void> {
  await api('/api/v1/tables/{tableId}/rows/{rowId}', { method: 'delete', params: { tableId, rowId }, query: { workspaceId } });
}

export async function addColumn(workspaceId: string, tableId: string, column: NewColumn): Promise<Column[]> {
  const r = await api('/api/v1/tables/{tableId}/columns', { method: 'post', params: { tableId }, body: { workspaceId, column } });
  return r.data.columns;
}

export async function createTable(workspaceId: string, name: string, columns: NewColumn[]): Promise<Table> {
  const r = await api('/api/v1/tables', { method: 'post', body: { workspaceId, name, schema: { columns } } });
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

/** Sets a table's write locks (workspace admins; others get 403). */
export async function setTableLocks(workspaceId: string, tableId: string, locks: TableLocks): Promise<Table> {
  const r = await api('/api/v1/tables/{tableId}', { method: 'patch', params: { tableId }, body: { workspaceId, locks } });
  return r.data.table;
}
