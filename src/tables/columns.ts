import { storableText } from '../db/storable-text.js';
import { HttpError } from '../http/errors.js';
import type { ZodIssue } from '../http/zod-issue.js';
import { NAME_PATTERN, TABLE_LIMITS } from './limits.js';
import { type SelectOption, type SelectOptionInput, coerceSelectValue, normalizeSelectOptions, optionIdOf } from './select-options.js';

/**
 * Column types, cell coercion and row validation. Pure functions: no SQL, no I/O. Over 450 lines: each column
 * type's definition rules and its cell coercion are read together (a type added touches both), and the row
 * checks use the same error helpers; the SQL of the types lives in column-sql.ts.
 */

export const COLUMN_TYPES = ['string', 'number', 'currency', 'boolean', 'date', 'json', 'select'] as const;
export type ColumnType = (typeof COLUMN_TYPES)[number];

export interface Column {
  /**
   * Stable id (`col_` + 32 hex), kept across renames. Columns defined before ids existed have none stored: the
   * store answers one derived from the table id and the name (stored-columns.ts `withColumnIds`), which is stored with
   * the next change of the table's schema.
   */
  id?: string;
  name: string;
  type: ColumnType;
  required: boolean;
  unique: boolean;
  /** A select column's options: cells hold their ids (select-options.ts). */
  options?: SelectOption[];
  /** Select columns: each cell holds a list of option ids rather than one (always a boolean on select columns). */
  multiple?: boolean;
  /** ISO 4217 code of a currency column's amounts (upper case); a currency column is a number column that names it. */
  currencyCode?: string;
  /**
   * Internal (never on the wire): the column's typed and unique expressions skip values not in its type's stored
   * form (column-sql.ts dateInstantExpression). Set on columns whose type was changed and on columns added to an
   * existing table: their indexes are built while the rows' older versions (which PostgreSQL indexes too) may
   * hold values of another type under the column's name.
   */
  guarded?: boolean;
}

/** What a caller sends to define a column. */
export interface ColumnInput {
  name: string;
  type: ColumnType;
  required?: boolean;
  unique?: boolean;
  options?: SelectOptionInput[];
  multiple?: boolean;
  currencyCode?: string;
}

/** Names the filter language uses for the row's own fields; columns may not take them. */
export const SYSTEM_FIELDS = ['id', 'createdAt', 'updatedAt'] as const;
const RESERVED = new Set(['id', 'createdat', 'updatedat', '__proto__']);

/** The code a currency column takes when none is given. */
const DEFAULT_CURRENCY = 'USD';

/** Column types stored and compared as JSON numbers (a currency column is a number column that names its currency). */
export const isNumeric = (type: ColumnType): boolean => type === 'number' || type === 'currency';

/** A value that does not fit its column. */
export class CellError extends Error {}

type Row = Record<string, unknown>;

// ------------------------------------------------------------------------------------------------
// Column definitions
// ------------------------------------------------------------------------------------------------

/**
 * Validates one column definition and returns it normalised (without an id); throws 400 naming the problem.
 * `keepUniqueSelect`: a change that leaves the flags and type alone may keep a unique select column defined
 * before such columns were refused. `previousOptions`: a select column's options before a change (an option given
 * without an id keeps the id of the one of the same name).
 */
export function normalizeColumn(input: ColumnInput, opts: { keepUniqueSelect?: boolean; previousOptions?: SelectOption[] } = {}): Column {
  const name = input.name;
  if (typeof name !== 'string' || name.length === 0 || name.length > TABLE_LIMITS.maxColumnNameLength) {
    throw new HttpError(400, `Invalid column name: must be 1 to ${TABLE_LIMITS.maxColumnNameLength} characters`);
  }
  if (!NAME_PATTERN.test(name)) {
    throw new HttpError(400, `Invalid column name "${name}": use letters, digits and underscores, not starting with a digit`);
  }
  if (RESERVED.has(name.toLowerCase())) throw new HttpError(400, `Column name "${name}" is reserved`);
  if (!(COLUMN_TYPES as readonly string[]).includes(input.type)) {
    throw new HttpError(400, `Invalid column type "${String(input.type)}" for column "${name}". Allowed types: ${COLUMN_TYPES.join(', ')}`);
  }
  const column: Column = { name, type: input.type, required: input.required === true, unique: input.unique === true };
  if (input.type === 'select') {
    // As in the reference: a select column's values are a few options, so uniqueness would cap it at as many rows.
    if (column.unique && !opts.keepUniqueSelect) throw new HttpError(400, `Select column "${name}" cannot be unique`);
    column.options = normalizeSelectOptions(name, input.options, opts.previousOptions);
    column.multiple = input.multiple === true;
  } else if (input.options !== undefined) {
    throw new HttpError(400, `Column "${name}": options are only allowed for select columns`);
  } else if (input.multiple !== undefined) {
    throw new HttpError(400, `Column "${name}": multiple is only allowed for select columns`);
  }
  if (input.type === 'currency') {
    const code = input.currencyCode ?? DEFAULT_CURRENCY;
    if (typeof code !== 'string' || !/^[A-Za-z]{3}$/.test(code)) {
      throw new HttpError(400, `Currency column "${name}": currencyCode must be a three-letter ISO 4217 code such as "USD"`);
    }
    column.currencyCode = code.toUpperCase();
  } else if (input.currencyCode !== undefined) {
    throw new HttpError(400, `Column "${name}": currencyCode is only allowed for currency columns`);
  }
  return column;
}

/** Validates a full column list (table creation): each column, count and case-insensitive name clashes. */
export function normalizeColumns(inputs: ColumnInput[]): Column[] {
  if (inputs.length === 0) throw new HttpError(400, 'Invalid schema: a table needs at least one column');
  if (inputs.length > TABLE_LIMITS.maxColumns) {
    throw new HttpError(400, `Invalid schema: a table can have at most ${TABLE_LIMITS.maxColumns} columns`);
  }
  const seen = new Set<string>();
  return inputs.map((input) => {
    const c = normalizeColumn(input);
    if (seen.has(c.name.toLowerCase())) throw new HttpError(400, `Invalid schema: duplicate column name "${c.name}"`);
    seen.add(c.name.toLowerCase());
    return c;
  });
}

// ------------------------------------------------------------------------------------------------
// Cells
// ------------------------------------------------------------------------------------------------

const NUMBER_TEXT = /^[+-]?(\d+\.?\d*|\.\d+)(e[+-]?\d+)?$/i;
const DATE_ONLY = /^(\d{4})-(\d{2})-(\d{2})$/;
const ISO_DATE_TIME = /^(\d{4})-(\d{2})-(\d{2})[T ](\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?(Z|[+-]\d{2}(?::?\d{2})?)?$/i;
const RFC_DATE_TIME = /^(?:[A-Za-z]{3},\s*)?\d{1,2}\s+[A-Za-z]{3}\s+\d{4}\s+\d{2}:\d{2}(?::\d{2})?\s+(?:GMT|UTC|Z|[+-]\d{4})$/;
const MIN_TIME = Date.UTC(1, 0, 1);
const MAX_TIME = Date.UTC(9999, 11, 31, 23, 59, 59, 999);
/** No NUL characters and no unpaired surrogates: PostgreSQL's jsonb refuses both. */
export const wellFormed = storableText;

function preview(v: unknown): string {
  let s: string;
  try {
    s = typeof v === 'string' ? JSON.stringify(v) : (JSON.stringify(v) ?? String(v));
  } catch {
    s = String(v);
  }
  return s.length > 60 ? `${s.slice(0, 57)}...` : s;
}

function kind(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'an array';
  if (typeof v === 'object') return 'an object';
  return `a ${typeof v}`;
}

function checkText(s: string): string {
  if (!wellFormed(s)) throw new CellError('text contains a NUL character or an unpaired surrogate');
  return s;
}

function coerceString(v: unknown): string {
  let s: string;
  if (typeof v === 'string') s = v;
  else if (typeof v === 'number' && Number.isFinite(v)) s = String(v);
  else if (typeof v === 'boolean') s = String(v);
  else throw new CellError(`expected a string, got ${kind(v)}`);
  // No bound of its own: the row's size bounds it (TABLE_LIMITS.maxRowBytes).
  return checkText(s);
}

function coerceNumber(v: unknown): number {
  if (typeof v === 'number') {
    if (!Number.isFinite(v)) throw new CellError('expected a finite number');
    return v === 0 ? 0 : v;
  }
  if (typeof v === 'string') {
    const t = v.trim();
    if (NUMBER_TEXT.test(t)) {
      const n = Number(t);
      if (Number.isFinite(n)) return n === 0 ? 0 : n;
    }
    throw new CellError(`expected a number, got ${preview(v)}`);
  }
  throw new CellError(`expected a number, got ${kind(v)}`);
}

function coerceBoolean(v: unknown): boolean {
  if (typeof v === 'boolean') return v;
  if (typeof v === 'string') {
    const t = v.trim().toLowerCase();
    if (t === 'true') return true;
    if (t === 'false') return false;
    throw new CellError(`expected true or false, got ${preview(v)}`);
  }
  throw new CellError(`expected a boolean, got ${kind(v)}`);
}

function isoOf(ms: number): string {
  if (!Number.isFinite(ms) || ms < MIN_TIME || ms > MAX_TIME) throw new CellError('date is outside the years 1 to 9999');
  return new Date(ms).toISOString();
}

/** Milliseconds of a UTC wall-clock time; the year is set on its own (Date.UTC reads years 0 to 99 as 1900 to 1999). */
function utcMs(y: number, month: number, day: number, h = 0, mi = 0, sec = 0, ms = 0): number {
  const t = new Date(Date.UTC(2000, month, day, h, mi, sec, ms));
  t.setUTCFullYear(y, month, day);
  return t.getTime();
}

function calendarDate(y: number, month: number, day: number): string {
  if (y < 1 || y > 9999) throw new CellError('date is outside the years 1 to 9999');
  return `${String(y).padStart(4, '0')}-${String(month + 1).padStart(2, '0')}-${String(day).padStart(2, '0')}`;
}

/** `YYYY` and `YYYY-MM`: ISO forms Date.parse reads as the first day of the year or month. */
const ISO_YEAR_MONTH = /^(\d{4})(?:-(\d{2}))?$/;
/** A number in a string: Date.parse reads "1" as 2001-01-01 and "1.5" as 2001-01-05, which no caller means. */
const BARE_NUMBER = /^[+-]?(\d+\.?\d*|\.\d+)$/;
const TIME_OF_DAY = /\d:\d{2}/;
/** A zone Date.parse honours: a name it knows, or an offset after the time of day. */
const ZONE = /(?:^|[\s\d])(?:z|ut|utc|gmt|[ecmp][sd]t)(?=$|[\s+-])|\d:\d{2}(?::\d{2})?(?:\.\d+)?\s*[+-]\d{1,2}(?::?\d{2})?$/i;
const MONTH_NAME = /(?:^|[^a-z])(jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)/i;
const MONTHS = ['jan', 'feb', 'mar', 'apr', 'may', 'jun', 'jul', 'aug', 'sep', 'oct', 'nov', 'dec'];
const NUMERIC_YMD = /^\d{4}[-/.](\d{1,2})[-/.]\d{1,2}(?!\d)/;
const NUMERIC_MDY = /^(\d{1,2})[-/.]\d{1,2}[-/.]\d{2,4}(?!\d)/;
/** Longer than any date Date.parse reads (a Date's own toString with its zone's name is about 70). */
const MAX_DATE_TEXT = 128;

/** The month (0 to 11) a date string names, to tell a day past the month's end, which Date.parse rolls over. */
function statedMonth(s: string): number | undefined {
  const name = MONTH_NAME.exec(s);
  if (name) return MONTHS.indexOf(name[1].toLowerCase());
  const ymd = NUMERIC_YMD.exec(s) ?? NUMERIC_MDY.exec(s);
  return ymd ? Number(ymd[1]) - 1 : undefined;
}

/**
 * A date string in any other form Date.parse reads ("2024/01/15", "Jan 15, 2024", "01/15/2024 10:30 PM",
 * "Mon Jan 15 2024 10:30:00 GMT+0100"), as in the reference. Without a time of day it is a calendar date.
 * With one but without a zone, its wall-clock time is read as UTC, as for ISO date-times and whatever the
 * server's zone (Date.parse would read it in the server's). A day past the end of its month is refused, not
 * rolled over into the next one.
 */
function parseLooseDate(s: string, original: unknown): string {
  const bad = () => new CellError(`expected a date, got ${preview(original)}`);
  if (s.length > MAX_DATE_TEXT || BARE_NUMBER.test(s)) throw bad();
  const ms = Date.parse(s);
  if (!Number.isFinite(ms)) throw bad();
  const d = new Date(ms);
  const zoned = ZONE.test(s.replace(/\([^)]*\)/g, ' '));
  if (!zoned) {
    // Read in the server's zone, the local fields are those written.
    const month = statedMonth(s);
    if (month !== undefined && month !== d.getMonth()) throw bad();
  }
  if (!TIME_OF_DAY.test(s)) {
    return zoned ? calendarDate(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate()) : calendarDate(d.getFullYear(), d.getMonth(), d.getDate());
  }
  if (zoned) return isoOf(ms);
  return isoOf(utcMs(d.getFullYear(), d.getMonth(), d.getDate(), d.getHours(), d.getMinutes(), d.getSeconds(), d.getMilliseconds()));
}

/**
 * Dates are stored as `YYYY-MM-DD` (a calendar date, compared as midnight UTC) or as a UTC instant
 * `YYYY-MM-DDTHH:mm:ss.sssZ`. Accepted: ISO 8601 dates and date-times (no offset means UTC), strictly checked;
 * `YYYY` and `YYYY-MM` (the first day); RFC 2822 / HTTP dates; any other string Date.parse reads (see
 * parseLooseDate), except a bare number in a string; and numbers as epoch milliseconds.
 */
export function coerceDate(v: unknown): string {
  if (typeof v === 'number') {
    if (!Number.isFinite(v)) throw new CellError('expected a date');
    return isoOf(v);
  }
  if (typeof v !== 'string') throw new CellError(`expected a date string, got ${kind(v)}`);
  const s = v.trim();
  const d = DATE_ONLY.exec(s);
  if (d) {
    const [y, m, day] = [Number(d[1]), Number(d[2]), Number(d[3])];
    const t = new Date(Date.UTC(2000, m - 1, day));
    t.setUTCFullYear(y);
    if (y < 1 || t.getUTCFullYear() !== y || t.getUTCMonth() !== m - 1 || t.getUTCDate() !== day) {
      throw new CellError(`expected a date, got ${preview(v)}`);
    }
    return s;
  }
  const dt = ISO_DATE_TIME.exec(s);
  if (dt) {
    const [, y, mo, da, h, mi, se, frac, zone] = dt;
    const [Y, M, D, H, I, S] = [Number(y), Number(mo), Number(da), Number(h), Number(mi), Number(se ?? 0)];
    if (M < 1 || M > 12 || D < 1 || D > 31 || H > 23 || I > 59 || S > 59) throw new CellError(`expected a date, got ${preview(v)}`);
    const base = new Date(Date.UTC(2000, M - 1, D, H, I, S, Math.floor(Number(`0.${frac ?? '0'}`) * 1000)));
    base.setUTCFullYear(Y);
    if (base.getUTCDate() !== D) throw new CellError(`expected a date, got ${preview(v)}`);
    let offsetMin = 0;
    if (zone && zone.toUpperCase() !== 'Z') {
      const z = /^([+-])(\d{2}):?(\d{2})?$/.exec(zone);
      if (!z || Number(z[2]) > 23 || Number(z[3] ?? 0) > 59) throw new CellError(`expected a date, got ${preview(v)}`);
      offsetMin = (z[1] === '-' ? -1 : 1) * (Number(z[2]) * 60 + Number(z[3] ?? 0));
    }
    return isoOf(base.getTime() - offsetMin * 60_000);
  }
  if (RFC_DATE_TIME.test(s)) {
    const ms = Date.parse(s);
    if (Number.isFinite(ms)) return isoOf(ms);
  }
  const ym = ISO_YEAR_MONTH.exec(s);
  if (ym) {
    const month = ym[2] === undefined ? 1 : Number(ym[2]);
    if (month < 1 || month > 12) throw new CellError(`expected a date, got ${preview(v)}`);
    return calendarDate(Number(ym[1]), month - 1, 1);
  }
  return parseLooseDate(s, v);
}

/** The instant a stored (or coerced) date stands for, as an ISO string with an explicit zone. */
export function dateInstant(stored: string): string {
  return stored.length === 10 ? `${stored}T00:00:00.000Z` : stored;
}

function checkJson(v: unknown, depth: number): void {
  if (depth > TABLE_LIMITS.maxJsonDepth) throw new CellError(`JSON value is nested deeper than ${TABLE_LIMITS.maxJsonDepth} levels`);
  if (typeof v === 'string') {
    checkText(v);
  } else if (typeof v === 'number') {
    if (!Number.isFinite(v)) throw new CellError('JSON numbers must be finite');
  } else if (Array.isArray(v)) {
    for (const x of v) checkJson(x, depth + 1);
  } else if (v !== null && typeof v === 'object') {
    for (const [k, x] of Object.entries(v)) {
      checkText(k);
      checkJson(x, depth + 1);
    }
  } else if (v !== null && typeof v !== 'boolean') {
    throw new CellError(`expected a JSON value, got ${kind(v)}`);
  }
}

/** A select cell: an option id, or with `multiple` a list of them (select-options.ts coerceSelectValue). */
function coerceSelect(column: Column, v: unknown): string | string[] {
  const r = coerceSelectValue(column, v);
  if ('error' in r) throw new CellError(r.error);
  return r.value;
}

/** The id of the one option a value names (a filter's operand on a select column, multiple or not). */
export function coerceOptionId(column: Column, v: unknown): string {
  const r = optionIdOf(column, v);
  if ('error' in r) throw new CellError(r.error);
  return r.value;
}

/** Coerces a non-null value to its column's type; throws CellError when it does not fit. */
export function coerceCell(column: Column, v: unknown): unknown {
  switch (column.type) {
    case 'string':
      return coerceString(v);
    case 'number':
    case 'currency':
      return coerceNumber(v);
    case 'boolean':
      return coerceBoolean(v);
    case 'date':
      return coerceDate(v);
    case 'select':
      return coerceSelect(column, v);
    case 'json':
      checkJson(v, 1);
      return v;
  }
}

// ------------------------------------------------------------------------------------------------
// Rows
// ------------------------------------------------------------------------------------------------

export interface RowIssue extends ZodIssue {
  column?: string;
  row?: number;
}

export interface PreparedRow {
  /** Columns to set, coerced. */
  set: Row;
  /** Columns to clear (given as null). */
  unset: string[];
}

export function columnMap(columns: Column[]): Map<string, Column> {
  return new Map(columns.map((c) => [c.name, c]));
}

function unknownColumnMessage(key: string, columns: Map<string, Column>): string {
  const near = [...columns.keys()].find((n) => n.toLowerCase() === key.toLowerCase());
  return near ? `Unknown column "${key}" (did you mean "${near}"?)` : `Unknown column "${key}"`;
}

/**
 * Validates and coerces one row's data.
 * `full`: the data is a whole row (insert, upsert): required columns must be present.
 * otherwise a patch: only given keys are checked; null clears a column unless it is required.
 */
export function prepareRow(
  columns: Map<string, Column>,
  data: Row,
  opts: { full: boolean; path: (string | number)[]; row?: number },
): { row: PreparedRow; issues: RowIssue[] } {
  const set: Row = {};
  const unset: string[] = [];
  const issues: RowIssue[] = [];
  const at = (column: string) => [...opts.path, column];
  const issue = (column: string, code: string, message: string) => {
    issues.push({ code, path: at(column), message, column, ...(opts.row !== undefined ? { row: opts.row } : {}) });
  };
  for (const [key, value] of Object.entries(data)) {
    const column = columns.get(key);
    if (!column) {
      issue(key, 'unknown_column', unknownColumnMessage(key, columns));
      continue;
    }
    if (value === null || value === undefined) {
      if (column.required) issue(key, 'required', `Missing required field: ${key}`);
      else unset.push(key);
      continue;
    }
    try {
      set[key] = coerceCell(column, value);
    } catch (err) {
      if (!(err instanceof CellError)) throw err;
      issue(key, 'invalid_type', `Invalid value for column "${key}" (${column.type}): ${err.message}`);
    }
  }
  if (opts.full) {
    for (const c of columns.values()) {
      if (c.required && !(c.name in set) && !issues.some((i) => i.column === c.name)) {
        issue(c.name, 'required', `Missing required field: ${c.name}`);
      }
    }
    if (issues.length === 0) {
      const bytes = Buffer.byteLength(JSON.stringify(set));
      if (bytes > TABLE_LIMITS.maxRowBytes) {
        issues.push({
          code: 'too_big', path: opts.path, message: `Row size exceeds limit (${bytes} bytes > ${TABLE_LIMITS.maxRowBytes} bytes)`,
          ...(opts.row !== undefined ? { row: opts.row } : {}),
        });
      }
    }
  }
  return { row: { set, unset }, issues };
}

/** Throws the 400 for a list of row issues: the first issue's message, all of them in details. */
export function rowIssuesError(issues: RowIssue[]): HttpError {
  const first = issues[0];
  const where = first.row !== undefined ? `Row ${first.row}: ` : '';
  // A batch's issues also carry `errors` (their message), the field the reference's batch answer lists per row.
  const details = issues.slice(0, 100).map((i) => (i.row !== undefined ? { ...i, errors: [i.message] } : i));
  return new HttpError(400, `${where}${first.message}`, { details });
}
