import type { Column } from './columns.js';
import type { SelectOption } from './select-options.js';
import type { IdentifiedColumn, RowRecord, TableRow } from './store.js';
import { type PublicLocks, publicLocks } from './table-locks.js';

/** Tables, columns and rows in the form the API and the engine port return them. */

export interface PublicColumn {
  /** `col_` + 32 hex, kept across renames. */
  id: string;
  name: string;
  type: Column['type'];
  required: boolean;
  unique: boolean;
  /** Select columns: their options; cells hold option ids (a list of them with `multiple`). */
  options?: SelectOption[];
  multiple?: boolean;
  currencyCode?: string;
}

export interface PublicTable {
  id: string;
  name: string;
  description: string;
  schema: { columns: PublicColumn[] };
  rowCount: number;
  maxRows: number;
  locks: PublicLocks;
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

type Data = Record<string, unknown>;

export const publicColumn = (c: IdentifiedColumn): PublicColumn => ({
  id: c.id,
  name: c.name,
  type: c.type,
  required: c.required === true,
  unique: c.unique === true,
  ...(c.type === 'select' ? { options: (c.options ?? []).map((o) => ({ id: o.id, name: o.name })), multiple: c.multiple === true } : {}),
  ...(c.currencyCode ? { currencyCode: c.currencyCode } : {}),
});

export const publicTable = (t: TableRow): PublicTable => ({
  id: t.id,
  name: t.name,
  description: t.description,
  schema: { columns: t.columns.map(publicColumn) },
  rowCount: t.row_count,
  maxRows: t.max_rows,
  locks: publicLocks(t.locked),
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
