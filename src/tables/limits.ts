import { MAX_SUBSTRING_OPERAND } from '../db/substring-match.js';

/** Limits of the Tables capability: fixed bounds and the per-plan table and row caps. */

export interface TablePlanLimits {
  maxTables: number;
  maxRowsPerTable: number;
}

/** Tables per workspace and rows per table, by plan (reference service defaults at HEAD). */
export const TABLE_PLAN_LIMITS: Record<string, TablePlanLimits> = {
  free: { maxTables: 5, maxRowsPerTable: 50_000 },
  pro: { maxTables: 100, maxRowsPerTable: 100_000 },
  team: { maxTables: 1000, maxRowsPerTable: 500_000 },
  enterprise: { maxTables: 10_000, maxRowsPerTable: 1_000_000 },
};

/** Limits of a plan; an unknown plan name gets the free plan's. */
export function tablePlanLimits(plan: string): TablePlanLimits {
  return Object.hasOwn(TABLE_PLAN_LIMITS, plan) ? TABLE_PLAN_LIMITS[plan] : TABLE_PLAN_LIMITS.free;
}

export const TABLE_LIMITS = {
  /** Columns of a table (the reference's figure at HEAD; 50 before). */
  maxColumns: 1000,
  /*
   * Each unique column has a unique index and each number or date column a typed one, all partial indexes on the
   * one `table_rows` relation every table shares: every row write of any table checks each index's predicate, and
   * every statement on `table_rows` is planned against them all. With 1,000 columns a table could bring 2,000 of
   * them, so the indexes stay within what a table of the old 50 columns could have: 50 unique columns (a unique
   * column needs its index, so past it the column is refused) and 50 typed indexes (given to number and date
   * columns in the order they are created; past it such a column has no index of its own, and filters and sorts on
   * it read the table's rows instead).
   */
  maxUniqueColumns: 50,
  maxTypedIndexes: 50,
  /**
   * Bytes of a row's data as stored (its JSON text): the reference's figure at HEAD (100 KiB before). Text cells
   * have no bound of their own beyond it.
   */
  maxRowBytes: 400 * 1024,
  maxTableNameLength: 128,
  maxColumnNameLength: 50,
  maxDescriptionLength: 500,
  maxSelectOptions: 100,
  maxSelectOptionLength: 100,
  /** Rows per batch insert, ids per batch delete, updates per batch update. */
  maxBatch: 1000,
  maxQueryLimit: 1000,
  defaultQueryLimit: 100,
  /**
   * Bytes of row data (the rows' stored JSON text) one page of a query returns at most, whatever its
   * `limit`: a page stops early once the next row would pass it (it always holds at least one row).
   * The default of TablesService's `maxPageBytes` option (env WEFT_TABLE_PAGE_MAX_BYTES).
   */
  maxPageBytes: 8 * 1024 * 1024,
  /** Nesting of a json cell's value. */
  maxJsonDepth: 64,
  /** Characters of the JSON-encoded filter / sort query parameters. */
  maxFilterLength: 32_768,
  maxSortLength: 4096,
  /** Nesting of $and / $or in a filter and conditions in one filter. */
  maxFilterDepth: 10,
  maxFilterConditions: 200,
  /** Values of one $in / $nin. */
  maxInValues: 1000,
  /*
   * The bounds below keep a filter's cost per row near one read of the row. The embedded database runs one
   * statement at a time and cannot interrupt it (docs/architecture.md, Tables: bounded statements).
   */
  /** Characters of a $contains / $startsWith / $endsWith operand on text. */
  maxPatternLength: MAX_SUBSTRING_OPERAND,
  /** Array elements in a json column's $contains operand (each is searched for through the cell's array). */
  maxJsonContainsElements: 8,
  /** Values of an $in / $nin compiled as containments (index-friendly); a longer list reads the cell once. */
  maxInContainments: 8,
  /** Reads of a row's data a filter may make directly; past it the statement reads each row's data once. */
  maxDirectDataReads: 2,
  /*
   * Bounds on the filter as a whole. The bounds above keep each condition near one pass over its cell, but a
   * filter may hold 200 conditions, and 200 conditions each at its bound cost 200 of those passes a row
   * (docs/architecture.md, Tables: bounded statements, "the filter as a whole").
   */
  /** Array elements of all json $contains operands of a filter together; an operand without arrays counts one. */
  maxFilterJsonContainsElements: 8,
  /**
   * Substring and pattern conditions ($contains, $ncontains, $startsWith, $endsWith, the $like family; on text
   * and ids) in a filter. Well under PostgreSQL's cache of 32 compiled regular expressions: past it each
   * condition compiles its expression again for every row.
   */
  maxFilterSubstrings: 16,
  /** Characters of all substring operands of a filter together. */
  maxFilterSubstringCharacters: 1024,
  /** Values of all $in / $nin lists of a filter together. */
  maxFilterInValues: 1000,
  /**
   * Bytes of a filter's JSON, wherever it comes from (a request body, a table block), as the operands of
   * equalities are compared with the cells they read. Three times maxFilterLength, which bounds the query
   * string in characters, so that any filter within that fits here too.
   */
  maxFilterBytes: 3 * 32_768,
  maxSortKeys: 10,
} as const;

export const NAME_PATTERN = /^[A-Za-z_][A-Za-z0-9_]*$/;
