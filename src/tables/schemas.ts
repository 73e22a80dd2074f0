import { z } from 'zod';
import { errorResponses, errorSchema } from '../http/schemas.js';
import { COLUMN_TYPES } from './columns.js';
import { TABLE_LIMITS } from './limits.js';

/** Request and response schemas of the Tables HTTP surface (also the OpenAPI document's). */

export const workspaceId = z
  .string({ error: (iss) => (iss.input === undefined ? 'workspaceId is required' : 'workspaceId must be a string') })
  .min(1)
  .max(128)
  .describe('Workspace id');
export const workspaceQuery = z.object({
  workspaceId: z
    .string({ error: (iss) => (iss.input === undefined ? 'workspaceId query parameter is required' : 'workspaceId must be a string') })
    .min(1)
    .max(128)
    .describe('Workspace id'),
});
export const optionalWorkspaceQuery = z.object({ workspaceId: z.string().min(1).max(128).optional().describe('Workspace id (or in the body)') });
export const optionalWorkspaceBody = z.object({ workspaceId: z.string().min(1).max(128).optional().describe('Workspace id (or in the query)') }).nullish();

export const tableParams = z.object({ tableId: z.string().min(1).max(128).describe('Table id (tbl_ + 32 hex)') });
export const rowParams = tableParams.extend({ rowId: z.string().min(1).max(128).describe('Row id (row_ + 32 hex)') });

const columnType = z.enum(COLUMN_TYPES);
const selectOptionsInput = z.array(z.union([
  z.string().max(TABLE_LIMITS.maxSelectOptionLength).describe('An option by its name (its id is then the name)'),
  z.object({
    id: z.string().min(1).max(TABLE_LIMITS.maxSelectOptionLength).optional()
      .describe('What cells hold; unique within the column. Default: the id of the option of the same name before a change, else the name'),
    name: z.string().max(TABLE_LIMITS.maxSelectOptionLength).describe('Unique within the column (case-insensitively)'),
  }),
])).max(TABLE_LIMITS.maxSelectOptions);
const multipleInput = z.boolean().optional();
export const columnInput = z.object({
  name: z.string().min(1).max(TABLE_LIMITS.maxColumnNameLength).describe('Letters, digits and underscores; not starting with a digit'),
  type: columnType,
  required: z.boolean().optional().describe('Default false'),
  unique: z.boolean().optional().describe(`Default false; enforced by the database. Not on select columns; at most ${TABLE_LIMITS.maxUniqueColumns} in a table`),
  options: selectOptionsInput.optional()
    .describe('Options of a select column, 1 to 100 (required for select, refused otherwise); cells hold their ids, and take an id or a name'),
  multiple: multipleInput.describe('Select columns only: each cell holds a list of option ids (default false)'),
  currencyCode: z.string().max(3).optional().describe('ISO 4217 code of a currency column (default USD; upper-cased), refused for other types'),
});
/** A column as a column change names it: its name (exact) or its id. */
export const columnRef = z.string().min(1).max(128).describe('The column\'s name or its id (col_ + 32 hex)');
export const columnUpdates = z.strictObject({
  name: z.string().min(1).max(TABLE_LIMITS.maxColumnNameLength).optional().describe('New name: letters, digits and underscores; rows are renamed with it'),
  type: columnType.optional().describe('New type: every existing value must convert to it, as on insert'),
  required: z.boolean().optional().describe('true: every row must already have a value'),
  unique: z.boolean().optional().describe('true: existing values must be distinct'),
  options: selectOptionsInput.optional()
    .describe('New options of a select column: the ids cells hold must stay among them (a renamed option keeps its id and its cells)'),
  multiple: multipleInput.describe('Select columns: true turns each cell into a list of one; false refuses cells holding more than one option'),
  currencyCode: z.string().max(3).optional().describe('New ISO 4217 code of a currency column (its amounts are kept as they are)'),
}).refine((u) => Object.values(u).some((v) => v !== undefined), { message: 'updates must change at least one of name, type, required, unique, options, multiple, currencyCode' });
export const column = z.object({
  id: z.string().describe('col_ + 32 hex; kept across renames'),
  name: z.string(),
  type: columnType,
  required: z.boolean(),
  unique: z.boolean(),
  options: z.array(z.object({ id: z.string(), name: z.string() })).optional()
    .describe('Select columns: their options; cells hold option ids'),
  multiple: z.boolean().optional().describe('Select columns: whether each cell holds a list of option ids'),
  currencyCode: z.string().optional().describe('Currency columns: the ISO 4217 code of their amounts'),
}).describe('Column');
const lockFlag = (what: string) => z.boolean().describe(`true: ${what} answers 423 {error, lock}`);
export const tableLocks = z.object({
  schemaLocked: lockFlag('adding, changing or deleting a column'),
  insertLocked: lockFlag('inserting rows (upserts that insert too)'),
  updateLocked: lockFlag('updating rows (upserts that update too)'),
  deleteLocked: lockFlag('deleting rows or the table'),
}).describe('Write locks; set by workspace admins with PATCH /api/v1/tables/{tableId}');
export const table = z.object({
  id: z.string(),
  name: z.string(),
  description: z.string(),
  schema: z.object({ columns: z.array(column) }),
  rowCount: z.number().int(),
  maxRows: z.number().int().describe("The plan's rows-per-table limit"),
  locks: tableLocks,
  createdAt: z.string(),
  updatedAt: z.string(),
}).describe('Table');
export const rowData = z.record(z.string(), z.unknown()).describe('Column name to value');
export const row = z.object({
  id: z.string(),
  data: rowData,
  position: z.number().int(),
  createdAt: z.string(),
  updatedAt: z.string(),
}).describe('Row');
export const filterObject = z.record(z.string(), z.unknown()).describe(
  'Filter: {"col": value} for equality, {"col": {"$op": operand}} with $eq $ne $gt $gte $lt $lte $in $nin $contains $ncontains $startsWith $endsWith (case-insensitive substrings) $like $nlike (case-sensitive) $ilike $nilike (whole-value patterns, * matches any characters) $empty (no value, an empty string or []) $isNull $isNotNull, combined with $and / $or. '
  + `At most ${TABLE_LIMITS.maxFilterConditions} conditions nested ${TABLE_LIMITS.maxFilterDepth} deep; substring operands of at most ${TABLE_LIMITS.maxPatternLength} characters; `
  + `a json column's $contains of at most ${TABLE_LIMITS.maxJsonContainsElements} array elements; $in / $nin of at most ${TABLE_LIMITS.maxInValues} values`,
);
export const batchLimit = z.number().int().min(1).max(TABLE_LIMITS.maxBatch);

export const rowsQuery = workspaceQuery.extend({
  filter: z.string().max(TABLE_LIMITS.maxFilterLength).optional().describe('JSON-encoded filter object'),
  sort: z.string().max(TABLE_LIMITS.maxSortLength).optional().describe('JSON-encoded {"column": "asc"|"desc", ...}; key order is priority'),
  limit: z.coerce.number({ error: 'Limit must be an integer' })
    .int('Limit must be an integer').min(1, 'Limit must be at least 1').max(TABLE_LIMITS.maxQueryLimit, `Limit cannot exceed ${TABLE_LIMITS.maxQueryLimit}`)
    .default(TABLE_LIMITS.defaultQueryLimit),
  offset: z.coerce.number({ error: 'Offset must be an integer' })
    .int('Offset must be an integer').min(0, 'Offset must be at least 0').max(1_000_000_000, 'Offset is too large')
    .default(0),
  includeTotal: z.string().max(10).optional()
    .describe('true/false/1/0 (default true). false: totalCount is null unless the page alone tells it, and no count of a filtered table runs'),
});

export const rowPage = z.object({
  rows: z.array(row),
  rowCount: z.number().int().describe('Rows in this response'),
  totalCount: z.number().int().nullable().describe('Rows matching the filter; null with includeTotal=false when counting them would take a statement of its own'),
  limit: z.number().int(),
  offset: z.number().int(),
  truncated: z.boolean().describe('True when the page stopped before `limit` rows because of the page byte budget'),
  nextOffset: z.number().int().nullable().describe('The offset of the next page (offset + rowCount); null when no rows follow'),
  nextCursor: z.string().nullable().describe('Null on the last page; otherwise more rows follow (page on with nextOffset)'),
});

export const ok = <T extends z.ZodType>(data: T) => z.object({ success: z.literal(true), data });
export const writeErrors = { ...errorResponses, 409: errorSchema, 423: errorSchema, 429: errorSchema };
/** A row query: also 429 when too many of the workspace's wait, and 503 when it ran past its time (PostgreSQL). */
export const queryErrors = { ...errorResponses, 429: errorSchema, 503: errorSchema };
/** An update or delete by filter: a write that scans like a query (409 too, from unique columns). */
export const filteredWriteErrors = { ...writeErrors, 503: errorSchema };
export { errorResponses };
