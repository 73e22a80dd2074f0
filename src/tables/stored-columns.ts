import { createHash } from 'node:crypto';
import { withSelectOptions } from './select-options.js';
import type { Column } from './columns.js';

/**
 * Columns as earlier versions stored them, read in today's form: without ids (defined before columns had them)
 * and select options as plain strings (before options had ids). Nothing is rewritten on read; the next change
 * of the table's schema stores the columns as read (setColumns), ids included.
 */

/**
 * The id of a column stored without one (defined before columns had ids): derived from the table id and the
 * column's name, so it answers the same on every read until a schema change stores it (setColumns stores the
 * columns as read, ids included), and a rename keeps it from then on.
 */
export function derivedColumnId(tableId: string, name: string): string {
  return `col_${createHash('sha256').update(`${tableId}\0${name}`).digest('hex').slice(0, 32)}`;
}

type WithIds<T> = T & { columns: (Column & { id: string })[] };

/** A table row read from the store, its columns in today's form (ids always set). */
export function withColumnIds<T extends { id: string; columns: (Column & { id?: string })[] }>(read: T): WithIds<T> {
  // Select columns stored with options as strings are read as {id, name} (select-options.ts).
  const t = withSelectOptions(read);
  if (t.columns.every((c) => typeof c.id === 'string')) return t as WithIds<T>;
  return { ...t, columns: t.columns.map((c) => (typeof c.id === 'string' ? c : { ...c, id: derivedColumnId(t.id, c.name) })) } as WithIds<T>;
}

