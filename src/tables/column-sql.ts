import type { Column } from './columns.js';
import { NAME_PATTERN } from './limits.js';

/**
 * SQL expressions of a table's columns over `table_rows.data`, shared by the per-column indexes
 * (store.ts), filters and sorts (filter-sql.ts): the same text in both, so the planner matches them.
 * Column names are embedded only after they were checked against NAME_PATTERN (no quotes possible).
 */

/** A quoted SQL string literal of a column name that was checked against the schema. */
export function nameLiteral(name: string): string {
  if (!NAME_PATTERN.test(name)) throw new Error(`unsafe column name ${name}`);
  return `'${name}'`;
}

/** `data->'col'` (jsonb) for an alias. */
export function jsonExpression(column: string, alias = ''): string {
  return `${alias ? `${alias}.` : ''}data->${nameLiteral(column)}`;
}

/**
 * The typed expression of a column, identical to the expression indexes built for number and
 * date columns (without an alias there) so the planner can match them.
 */
export function typedExpression(column: Column, alias = ''): string {
  const a = alias ? `${alias}.` : '';
  const lit = nameLiteral(column.name);
  switch (column.type) {
    case 'number':
      return `((${a}data->${lit})::numeric)`;
    case 'date':
      return `weft_table_ts(${a}data->>${lit})`;
    case 'boolean':
      return `((${a}data->${lit})::boolean)`;
    case 'json':
      return `(${a}data->${lit})`;
    case 'string':
    case 'select':
      return `((${a}data->>${lit}) COLLATE "C")`;
  }
}

/** The expression a unique column's index is built on: equality of stored values (instants for dates). */
export function uniqueExpression(column: Column, alias = ''): string {
  const a = alias ? `${alias}.` : '';
  return column.type === 'date' ? `weft_table_ts(${a}data->>${nameLiteral(column.name)})` : `(${a}data->${nameLiteral(column.name)})`;
}
