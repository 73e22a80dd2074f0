import type { Column } from './columns.js';
import { NAME_PATTERN } from './limits.js';
import { optionRankSql } from './select-options.js';

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

/** The stored forms of a date cell (columns.ts coerceDate), as a regular expression. */
const STORED_DATE = String.raw`'^[0-9]{4}-[0-9]{2}-[0-9]{2}(T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{3}Z)?$'`;

/**
 * The instant of a date column's cell. A guarded column's (see `Column.guarded`) reads only cells in a stored
 * date form. Why: changing a column's type rewrites its cells, and PostgreSQL builds an index of the new type
 * within that transaction over the rows' versions from before the change too (it indexes rows the transaction
 * deleted), where the unguarded cast fails on the old values (text that is no date, a number, ...). Every value
 * the change kept converted with insert's checks, so an old value in a stored form is a valid date.
 */
function dateInstantExpression(column: Column, a: string): string {
  const text = `${a}data->>${nameLiteral(column.name)}`;
  return column.guarded ? `weft_table_ts(CASE WHEN ${text} ~ ${STORED_DATE} THEN ${text} END)` : `weft_table_ts(${text})`;
}

/**
 * The typed expression of a column, identical to the expression indexes built for number and
 * date columns (without an alias there) so the planner can match them. A guarded column's (see
 * dateInstantExpression) reads only numbers as numbers.
 */
export function typedExpression(column: Column, alias = ''): string {
  const a = alias ? `${alias}.` : '';
  const lit = nameLiteral(column.name);
  switch (column.type) {
    case 'number':
    case 'currency':
      return column.guarded
        ? `(CASE WHEN jsonb_typeof(${a}data->${lit}) = 'number' THEN (${a}data->${lit})::numeric END)`
        : `((${a}data->${lit})::numeric)`;
    case 'date':
      return dateInstantExpression(column, a);
    case 'boolean':
      return `((${a}data->${lit})::boolean)`;
    case 'json':
      return `(${a}data->${lit})`;
    case 'string':
    case 'select':
      return `((${a}data->>${lit}) COLLATE "C")`;
  }
}

/**
 * What a sort on a column orders by: its typed expression, but a select column's option name (the rank of the
 * cell's option among the names; a multiple cell's first option), not the id its cells hold.
 */
export function sortExpression(column: Column, alias = ''): string {
  if (column.type !== 'select') return typedExpression(column, alias);
  const a = alias ? `${alias}.` : '';
  const lit = nameLiteral(column.name);
  return optionRankSql(column, column.multiple ? `(${a}data->${lit}->>0)` : `(${a}data->>${lit})`);
}

/** The expression a unique column's index is built on: equality of stored values (instants for dates). */
export function uniqueExpression(column: Column, alias = ''): string {
  const a = alias ? `${alias}.` : '';
  return column.type === 'date' ? dateInstantExpression(column, a) : `(${a}data->${nameLiteral(column.name)})`;
}
