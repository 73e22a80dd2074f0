import type { Queryable } from '../db/database.js';
import { HttpError } from '../http/errors.js';
import { compilingFilter } from './errors.js';
import { type CompiledFilter, SqlParams, compileFilter, compileSortKeys, orderBySql } from './filter-sql.js';
import { TABLE_LIMITS } from './limits.js';
import * as store from './store.js';
import type { RowRecord, TableRow } from './store.js';
import { type PublicRow, publicRow } from './wire-format.js';

/** Reading rows: one page of a filtered, sorted query, capped by rows and by bytes. */

export type Filter = Record<string, unknown>;
export type Sort = Record<string, unknown>;

export interface RowQuery {
  filter?: Filter;
  sort?: Sort;
  limit?: number;
  offset?: number;
  /** false: no count of the matching rows where it would take a statement of its own (totalCount null). */
  includeTotal?: boolean;
}

/**
 * One page of a query. A page holds at most `limit` rows and at most the page byte budget of row data
 * (the rows' stored JSON text), but always at least one row: when the budget stops it before `limit`
 * rows, `truncated` is true. Either way the next page starts at `nextOffset` (offset + rows on this
 * page), null when no rows follow; `totalCount` counts every matching row (null when the query asked for
 * no count and the page alone does not tell it: the next page is then offered whenever this one is full).
 */
export interface RowPage {
  rows: PublicRow[];
  totalCount: number | null;
  limit: number;
  offset: number;
  truncated: boolean;
  nextOffset: number | null;
}

/**
 * A filter compiled against a table's columns (a FilterError becomes its 400). A filter that would read
 * each row's data more than `maxDirectDataReads` times is compiled again to read it once (store.rowsFrom).
 */
export function compileWhere(table: TableRow, filter: Filter | undefined): { f: CompiledFilter; rows: store.RowFilter } {
  let params = new SqlParams([table.id]);
  let f = compilingFilter(() => compileFilter(filter, table.columns, params, 'r'));
  const readDataOnce = f.dataReads > TABLE_LIMITS.maxDirectDataReads;
  if (readDataOnce) {
    params = new SqlParams([table.id]);
    f = compileFilter(filter, table.columns, params, 'r', 'd');
  }
  return { f, rows: { from: store.rowsFrom(readDataOnce), where: f.sql, params: params.values, dataAlias: readDataOnce ? 'd' : 'r' } };
}

export function checkPaging(query: RowQuery): void {
  const { limit, offset } = query;
  if (limit !== undefined && (!Number.isInteger(limit) || limit < 1 || limit > TABLE_LIMITS.maxQueryLimit)) {
    throw new HttpError(400, `limit must be an integer from 1 to ${TABLE_LIMITS.maxQueryLimit}`);
  }
  if (offset !== undefined && (!Number.isInteger(offset) || offset < 0)) throw new HttpError(400, 'offset must be an integer of at least 0');
}

/** One page of `table`'s rows matching `query`, holding at most `maxPageBytes` of row data (at least one row). */
export async function queryPage(q: Queryable, table: TableRow, query: RowQuery, maxPageBytes: number): Promise<RowPage> {
  const limit = query.limit ?? TABLE_LIMITS.defaultQueryLimit;
  const offset = query.offset ?? 0;
  const { f, rows: filter } = compileWhere(table, query.filter);
  // Sort keys read the data where the filter does: when it is read once, from `d` too.
  const keys = compilingFilter(() => compileSortKeys(query.sort, table.columns, f.nonNull, 'r', filter.dataAlias));
  let rows: RowRecord[];
  // Rows the page matched, also those past the byte budget (which come back without their data).
  let matched: number;
  if (Number(table.bytes) <= maxPageBytes) {
    // The whole table fits in the budget, so any page of it does: the plain query.
    rows = await store.selectRows(q, filter, orderBySql(keys), limit, offset);
    matched = rows.length;
  } else {
    const page = await store.selectPage(q, filter, keys, limit, offset, maxPageBytes);
    rows = page.filter((r): r is RowRecord => r.data !== null);
    matched = page.length;
  }
  let totalCount: number | null;
  if (matched > 0 && matched < limit) totalCount = offset + matched;
  else if (offset === 0 && matched === 0) totalCount = 0;
  else if (f.sql === 'TRUE') totalCount = matched > 0 ? Math.max(table.row_count, offset + matched) : table.row_count;
  else totalCount = query.includeTotal === false ? null : await store.countRows(q, filter);
  const next = offset + rows.length;
  return {
    rows: rows.map((r) => publicRow(r, table.columns)),
    totalCount,
    limit,
    offset,
    truncated: rows.length < matched,
    nextOffset: (totalCount === null ? matched > 0 : next < totalCount) ? next : null,
  };
}
