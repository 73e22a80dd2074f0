// Over 450 lines: the filter compiler and its whole-filter budgets stay together, so every operator is counted
// against the same limits (docs/architecture.md, Tables: bounded statements).
import { CellError, type Column, coerceCell, coerceDate, coerceOptionId, dateInstant, isNumeric, wellFormed } from './columns.js';
import { jsonExpression, nameLiteral, sortExpression, typedExpression } from './column-sql.js';
import { optionIdsMatching } from './select-options.js';
import { substringRegex, wildcardRegex } from '../db/substring-match.js';
import { measureJson } from '../engine/json-size.js';
import { NAME_PATTERN, TABLE_LIMITS } from './limits.js';

export { jsonExpression, typedExpression, uniqueExpression } from './column-sql.js';

/**
 * Compiles the JSON filter and sort of the rows API to parameterized SQL over `table_rows`.
 * Values only ever travel as parameters; column names are embedded only after they were found in
 * the table's schema (and they match NAME_PATTERN, so they hold no quotes). A select column's sort key
 * embeds its option ids, escaped (select-options.ts optionRankSql): the table's schema, not the request.
 *
 * Index use: equality on a scalar compiles to `data @> '{"col": value}'` (GIN jsonb_path_ops);
 * number and date columns compare through the same typed expressions the per-table expression
 * indexes are built on (`typedExpression`), so ranges and sorts on them can use those indexes.
 */

export const FILTER_OPERATORS = [
  '$eq', '$ne', '$gt', '$gte', '$lt', '$lte', '$in', '$nin',
  '$contains', '$ncontains', '$startsWith', '$endsWith', '$like', '$ilike', '$nlike', '$nilike',
  '$empty', '$isNull', '$isNotNull',
] as const;

/** Whole-value patterns (`*` any run of characters): case-sensitive or not, and their negations. */
const PATTERN_OPS = {
  $like: { regex: '~', negated: false }, $ilike: { regex: '~*', negated: false },
  $nlike: { regex: '~', negated: true }, $nilike: { regex: '~*', negated: true },
} as const;

/** A condition that matches where `sql` does not, null cells included (as `$ne` and `$nin` do). */
const negated = (sql: string) => ({ sql: `NOT COALESCE(${sql}, FALSE)`, excludesNull: false });
type Operator = (typeof FILTER_OPERATORS)[number];

/**
 * A filter, sort or their JSON text that cannot be compiled. Pure: callers at the HTTP edge answer it
 * with a 400 carrying the message; `field` names the column or key at fault when there is one.
 */
export class FilterError extends Error {
  constructor(message: string, readonly field?: string) {
    super(message);
    this.name = 'FilterError';
  }
}

const bad = (message: string, field?: string) => new FilterError(message, field);

/** Collects positional parameters: `add(value)` returns `$n`. */
export class SqlParams {
  readonly values: unknown[];
  constructor(initial: unknown[] = []) {
    this.values = [...initial];
  }
  add(value: unknown): string {
    this.values.push(value);
    return `$${this.values.length}`;
  }
}

type SystemField = 'id' | 'createdAt' | 'updatedAt';
const SYSTEM: Record<SystemField, { sql: string; type: 'text' | 'timestamptz' }> = {
  id: { sql: 'id', type: 'text' },
  createdAt: { sql: 'created_at', type: 'timestamptz' },
  updatedAt: { sql: 'updated_at', type: 'timestamptz' },
};
const isSystem = (name: string): name is SystemField => Object.hasOwn(SYSTEM, name);

export interface CompiledFilter {
  /** A boolean SQL expression ('TRUE' for an empty filter). */
  sql: string;
  /** Columns the filter requires to be non-null in every matching row (top-level conjunction). */
  nonNull: Set<string>;
  /**
   * How many times the expression reads the row's `data`. PostgreSQL fetches and decompresses a stored
   * (TOASTed) value anew for each operator that reads it, so a scan costs about this many reads of each row.
   */
  dataReads: number;
}

interface State {
  params: SqlParams;
  columns: Map<string, Column>;
  /** The alias user columns are read through (the row's `data`). */
  alias: string;
  /** The alias of the row's own columns (id, created_at, updated_at). */
  rowAlias: string;
  conditions: number;
  /** What the filter has used so far of the bounds on the filter as a whole (TABLE_LIMITS.maxFilter*). */
  spent: { jsonElements: number; substrings: number; substringCharacters: number; inValues: number };
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Parses the `filter` / `sort` query parameters: JSON text of an object. */
export function parseJsonObjectParam(text: string | undefined, what: 'filter' | 'sort'): Record<string, unknown> | undefined {
  if (text === undefined || text.trim() === '') return undefined;
  const max = what === 'filter' ? TABLE_LIMITS.maxFilterLength : TABLE_LIMITS.maxSortLength;
  if (text.length > max) throw bad(`${what} is longer than ${max} characters`);
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch {
    throw bad(`Invalid ${what} JSON: ${what} must be a JSON-encoded object`);
  }
  if (!isPlainObject(v)) throw bad(`${what} must be a JSON object`);
  return v;
}

function column(state: State, name: string, where: string): Column | SystemField {
  if (isSystem(name)) return name;
  if (!NAME_PATTERN.test(name)) throw bad(`Invalid field name ${JSON.stringify(name.slice(0, 60))} in ${where}`, name);
  const c = state.columns.get(name);
  if (!c) throw bad(`Unknown column "${name}" in ${where}`, name);
  return c;
}

function operand(c: Column, op: string, v: unknown): unknown {
  try {
    if (c.type !== 'select') return coerceCell(c, v);
    // A select operand names one option, by id or name. A multiple column's may name several: the cell holds them all.
    if (!c.multiple || !Array.isArray(v) || op === '$in' || op === '$nin') return coerceOptionId(c, v);
    if (v.length === 0) throw bad(`${op} on column "${c.name}" needs at least one option (use $empty for cells without one)`, c.name);
    return [...new Set(v.map((x) => coerceOptionId(c, x)))];
  } catch (err) {
    if (err instanceof CellError) throw bad(`Invalid value for ${op} on column "${c.name}" (${c.type}): ${err.message}`, c.name);
    throw err;
  }
}

/** A multiple select cell holds a list: equality with an option is the list's holding it. */
const stored = (c: Column, value: unknown): unknown => (c.type === 'select' && c.multiple && !Array.isArray(value) ? [value] : value);

/** A select cell holding one of `ids` (option ids matched by their names; a multiple cell, any of its list). */
function holdsAnyOption(state: State, c: Column, ids: string[]): string {
  if (ids.length === 0) return 'FALSE';
  if (c.multiple) return `${jsonExpression(c.name, state.alias)} ?| ${state.params.add(ids)}::text[]`;
  return `(${state.alias ? `${state.alias}.` : ''}data->>${nameLiteral(c.name)}) = ANY(${state.params.add(ids)}::text[])`;
}

function systemOperand(f: SystemField, op: string, v: unknown): string {
  if (SYSTEM[f].type === 'timestamptz') {
    try {
      return dateInstant(coerceDate(v));
    } catch (err) {
      if (err instanceof CellError) throw bad(`Invalid value for ${op} on "${f}": ${err.message}`, f);
      throw err;
    }
  }
  if (typeof v !== 'string') throw bad(`Invalid value for ${op} on "${f}": expected a string`, f);
  if (!wellFormed(v)) throw bad(`Invalid value for ${op} on "${f}": text contains a NUL character or an unpaired surrogate`, f);
  return v;
}

function flag(op: string, name: string, v: unknown): boolean {
  if (v === true || v === 'true') return true;
  if (v === false || v === 'false') return false;
  throw bad(`${op} on "${name}" expects true or false`, name);
}

function likePattern(v: string, op: '$contains' | '$startsWith' | '$endsWith'): string {
  const escaped = v.replace(/[\\%_]/g, (m) => `\\${m}`);
  return op === '$contains' ? `%${escaped}%` : op === '$startsWith' ? `${escaped}%` : `%${escaped}`;
}

const SUBSTRING_KIND = { $contains: 'contains', $startsWith: 'startsWith', $endsWith: 'endsWith' } as const;

/** Array elements in a JSON `$contains` operand, counted through nested objects and arrays. */
function arrayElements(v: unknown): number {
  if (Array.isArray(v)) return v.reduce((n: number, x) => n + 1 + arrayElements(x), 0);
  if (typeof v === 'object' && v !== null) return Object.values(v).reduce((n: number, x) => n + arrayElements(x), 0);
  return 0;
}

const RANGE_SQL: Record<string, string> = { $gt: '>', $gte: '>=', $lt: '<', $lte: '<=' };

/** Equality of a user column with a non-null value (already coerced). */
function equals(state: State, c: Column, value: unknown): string {
  const { params, alias } = state;
  const a = alias ? `${alias}.` : '';
  if (c.type === 'date') return `${typedExpression(c, alias)} = ${params.add(dateInstant(value as string))}::timestamptz`;
  if (c.type === 'json' && typeof value === 'object' && value !== null) {
    return `${jsonExpression(c.name, alias)} = ${params.add(JSON.stringify(value))}::jsonb`;
  }
  return `${a}data @> ${params.add(JSON.stringify({ [c.name]: stored(c, value) }))}::jsonb`;
}

function notNull(state: State, c: Column): string {
  return `${jsonExpression(c.name, state.alias)} IS NOT NULL`;
}

function isNullSql(state: State, c: Column): string {
  return `${jsonExpression(c.name, state.alias)} IS NULL`;
}

function inList(state: State, c: Column, op: string, values: unknown): { sql: string; hasNull: boolean } {
  if (!Array.isArray(values)) throw bad(`${op} on column "${c.name}" expects an array`, c.name);
  if (values.length > TABLE_LIMITS.maxInValues) throw bad(`${op} on column "${c.name}" has more than ${TABLE_LIMITS.maxInValues} values`, c.name);
  spendInValues(state, values.length);
  const nonNull = values.filter((v) => v !== null && v !== undefined);
  const hasNull = nonNull.length !== values.length;
  const parts: string[] = [];
  if (nonNull.length > 0) {
    const coerced = nonNull.map((v) => operand(c, op, v));
    if (c.type === 'date') {
      parts.push(`${typedExpression(c, state.alias)} = ANY(${state.params.add(coerced.map((v) => dateInstant(v as string)))}::timestamptz[])`);
    } else if (c.type === 'json' && coerced.some((v) => typeof v === 'object' && v !== null)) {
      parts.push(`${jsonExpression(c.name, state.alias)} = ANY(${state.params.add(coerced.map((v) => JSON.stringify(v)))}::jsonb[])`);
    } else if (c.type === 'select' && c.multiple && coerced.length > TABLE_LIMITS.maxInContainments) {
      parts.push(holdsAnyOption(state, c, coerced as string[]));
    } else if (coerced.length > TABLE_LIMITS.maxInContainments) {
      // One read of the cell against the list, rather than one containment (and one read of the row) a value.
      parts.push(`${jsonExpression(c.name, state.alias)} = ANY(${state.params.add(coerced.map((v) => JSON.stringify(v)))}::jsonb[])`);
    } else {
      // Containments, so that a short list can use the rows' GIN index.
      const a = state.alias ? `${state.alias}.` : '';
      for (const v of coerced) parts.push(`${a}data @> ${state.params.add(JSON.stringify({ [c.name]: stored(c, v) }))}::jsonb`);
    }
  }
  if (hasNull) parts.push(isNullSql(state, c));
  // Each containment (and the null test) is a comparison of its own for every row: the operator counted one.
  for (let i = 1; i < parts.length; i++) count(state);
  return { sql: parts.length === 0 ? 'FALSE' : parts.length === 1 ? parts[0] : `(${parts.join(' OR ')})`, hasNull };
}

/** One operator on a user column. Returns the SQL and whether it excludes null cells. */
function userCondition(state: State, c: Column, op: Operator, v: unknown): { sql: string; excludesNull: boolean } {
  const { params, alias } = state;
  switch (op) {
    case '$eq':
      if (v === null) return { sql: isNullSql(state, c), excludesNull: false };
      return { sql: equals(state, c, operand(c, op, v)), excludesNull: true };
    case '$ne':
      if (v === null) return { sql: notNull(state, c), excludesNull: true };
      return { sql: `NOT COALESCE(${equals(state, c, operand(c, op, v))}, FALSE)`, excludesNull: false };
    case '$in': {
      const r = inList(state, c, op, v);
      return { sql: r.sql, excludesNull: !r.hasNull };
    }
    case '$nin': {
      const r = inList(state, c, op, v);
      return { sql: `NOT COALESCE(${r.sql}, FALSE)`, excludesNull: r.hasNull };
    }
    case '$gt':
    case '$gte':
    case '$lt':
    case '$lte': {
      if (v === null) throw bad(`${op} on column "${c.name}" needs a value`, c.name);
      const cmp = RANGE_SQL[op];
      if (isNumeric(c.type)) return { sql: `${typedExpression(c, alias)} ${cmp} ${params.add(operand(c, op, v))}::numeric`, excludesNull: true };
      if (c.type === 'date') {
        return { sql: `${typedExpression(c, alias)} ${cmp} ${params.add(dateInstant(operand(c, op, v) as string))}::timestamptz`, excludesNull: true };
      }
      if (c.type === 'string') return { sql: `${typedExpression(c, alias)} ${cmp} ${params.add(operand(c, op, v))}::text`, excludesNull: true };
      throw bad(`Operator ${op} is not supported on ${c.type} column "${c.name}"`, c.name);
    }
    case '$contains':
    case '$startsWith':
    case '$endsWith': {
      if (c.type === 'json' && op === '$contains') {
        if (v === null || v === undefined) throw bad(`${op} on column "${c.name}" needs a value`, c.name);
        const value = operand(c, op, v);
        // Each array element of the operand is looked for through the cell's whole array, one by one.
        const elements = arrayElements(value);
        if (elements > TABLE_LIMITS.maxJsonContainsElements) {
          throw bad(`${op} on column "${c.name}" has more than ${TABLE_LIMITS.maxJsonContainsElements} array elements`, c.name);
        }
        // A scalar operand is still looked for through the cell's array once.
        spendJsonElements(state, Math.max(1, elements));
        return { sql: `${jsonExpression(c.name, alias)} @> ${params.add(JSON.stringify(value))}::jsonb`, excludesNull: true };
      }
      if (c.type === 'select' && c.multiple && op === '$contains') {
        // On a list of options, $contains is membership (of each option an array names).
        if (v === null || v === undefined) throw bad(`${op} on column "${c.name}" needs a value`, c.name);
        return { sql: equals(state, c, operand(c, op, v)), excludesNull: true };
      }
      if (c.type !== 'string' && c.type !== 'select') throw bad(`Operator ${op} is not supported on ${c.type} column "${c.name}"`, c.name);
      if (typeof v !== 'string' && typeof v !== 'number') throw bad(`${op} on column "${c.name}" expects a string`, c.name);
      const text = String(v);
      if (text.length === 0) throw bad(`${op} on column "${c.name}" needs a non-empty string`, c.name);
      if (text.length > TABLE_LIMITS.maxPatternLength) {
        throw bad(`${op} on column "${c.name}" is longer than ${TABLE_LIMITS.maxPatternLength} characters`, c.name);
      }
      operand({ ...c, type: 'string' }, op, text);
      spendSubstring(state, text.length);
      if (c.type === 'select') return { sql: holdsAnyOption(state, c, optionIdsMatching(c, op, text)), excludesNull: true };
      return { sql: `(${alias ? `${alias}.` : ''}data->>${nameLiteral(c.name)}) ~* ${params.add(substringRegex(text, SUBSTRING_KIND[op]))}`, excludesNull: true };
    }
    case '$ncontains':
      return negated(userCondition(state, c, '$contains', v).sql);
    case '$like':
    case '$ilike':
    case '$nlike':
    case '$nilike': {
      if (c.type !== 'string' && c.type !== 'select') throw bad(`Operator ${op} is not supported on ${c.type} column "${c.name}"`, c.name);
      const pattern = patternOperand(op, c.name, v);
      operand({ ...c, type: 'string' }, op, pattern);
      spendSubstring(state, pattern.length);
      const { regex, negated: not } = PATTERN_OPS[op];
      if (c.type === 'select') {
        const names = holdsAnyOption(state, c, optionIdsMatching(c, op, pattern));
        return not ? negated(names) : { sql: names, excludesNull: true };
      }
      const sql = `(${alias ? `${alias}.` : ''}data->>${nameLiteral(c.name)}) ${regex} ${params.add(wildcardRegex(pattern))}`;
      return not ? negated(sql) : { sql, excludesNull: true };
    }
    case '$empty': {
      // Empty: no value, an empty string, or an empty list.
      const j = jsonExpression(c.name, alias);
      const empty = `(${j} IS NULL OR ${j} = '""'::jsonb OR ${j} = '[]'::jsonb)`;
      return flag(op, c.name, v) ? { sql: empty, excludesNull: false } : { sql: `NOT ${empty}`, excludesNull: true };
    }
    case '$isNull':
      return flag(op, c.name, v) ? { sql: isNullSql(state, c), excludesNull: false } : { sql: notNull(state, c), excludesNull: true };
    case '$isNotNull':
      return flag(op, c.name, v) ? { sql: notNull(state, c), excludesNull: true } : { sql: isNullSql(state, c), excludesNull: false };
  }
}

/** A `$like`-family operand: a non-empty string within the pattern length, its characters spent as a substring's. */
function patternOperand(op: string, name: string, v: unknown): string {
  if (typeof v !== 'string' || v.length === 0) throw bad(`${op} on "${name}" needs a non-empty string pattern (* matches any characters)`, name);
  if (v.length > TABLE_LIMITS.maxPatternLength) throw bad(`${op} on "${name}" is longer than ${TABLE_LIMITS.maxPatternLength} characters`, name);
  return v;
}

/** One operator on id / createdAt / updatedAt. */
function systemCondition(state: State, f: SystemField, op: Operator, v: unknown): string {
  const a = state.rowAlias ? `${state.rowAlias}.` : '';
  const col = `${a}${SYSTEM[f].sql}`;
  const type = SYSTEM[f].type;
  switch (op) {
    case '$eq':
      return v === null ? 'FALSE' : `${col} = ${state.params.add(systemOperand(f, op, v))}::${type}`;
    case '$ne':
      return v === null ? 'TRUE' : `${col} <> ${state.params.add(systemOperand(f, op, v))}::${type}`;
    case '$gt':
    case '$gte':
    case '$lt':
    case '$lte':
      return `${col} ${RANGE_SQL[op]} ${state.params.add(systemOperand(f, op, v))}::${type}`;
    case '$in':
    case '$nin': {
      if (!Array.isArray(v)) throw bad(`${op} on "${f}" expects an array`, f);
      if (v.length > TABLE_LIMITS.maxInValues) throw bad(`${op} on "${f}" has more than ${TABLE_LIMITS.maxInValues} values`, f);
      spendInValues(state, v.length);
      const values = v.filter((x) => x !== null).map((x) => systemOperand(f, op, x));
      const any = values.length === 0 ? 'FALSE' : `${col} = ANY(${state.params.add(values)}::${type}[])`;
      return op === '$in' ? any : `NOT (${any})`;
    }
    case '$contains':
    case '$startsWith':
    case '$endsWith':
      if (f !== 'id') throw bad(`Operator ${op} is not supported on "${f}"`, f);
      if (typeof v !== 'string' || v.length === 0) throw bad(`${op} on "${f}" needs a non-empty string`, f);
      systemOperand(f, op, v);
      if (v.length > TABLE_LIMITS.maxPatternLength) throw bad(`${op} on "${f}" is longer than ${TABLE_LIMITS.maxPatternLength} characters`, f);
      // LIKE tries the operand at each position of the id: short ids, but still a pass each.
      spendSubstring(state, v.length);
      return `${col} ILIKE ${state.params.add(likePattern(v, op))}`;
    case '$ncontains':
      return `NOT (${systemCondition(state, f, '$contains', v)})`;
    case '$like':
    case '$ilike':
    case '$nlike':
    case '$nilike': {
      if (f !== 'id') throw bad(`Operator ${op} is not supported on "${f}"`, f);
      const pattern = systemOperand(f, op, patternOperand(op, f, v));
      spendSubstring(state, pattern.length);
      const { regex, negated: not } = PATTERN_OPS[op];
      const sql = `${col} ${regex} ${state.params.add(wildcardRegex(pattern))}`;
      return not ? `NOT (${sql})` : sql;
    }
    case '$empty':
      // The row's own fields always hold a value.
      return flag(op, f, v) ? 'FALSE' : 'TRUE';
    case '$isNull':
      return flag(op, f, v) ? 'FALSE' : 'TRUE';
    case '$isNotNull':
      return flag(op, f, v) ? 'TRUE' : 'FALSE';
  }
}

function isOperator(k: string): k is Operator {
  return (FILTER_OPERATORS as readonly string[]).includes(k);
}

function invalidOperator(op: string): FilterError {
  return bad(`Invalid operator ${JSON.stringify(op.slice(0, 40))}. Allowed operators: ${FILTER_OPERATORS.join(', ')}, $and, $or`);
}

function count(state: State): void {
  state.conditions++;
  if (state.conditions > TABLE_LIMITS.maxFilterConditions) {
    throw bad(`filter has more than ${TABLE_LIMITS.maxFilterConditions} conditions (a $in or $nin of up to ${TABLE_LIMITS.maxInContainments} values counts one for each value)`);
  }
}

/*
 * The bounds on the filter as a whole: each condition's own bound keeps it near one pass over its cell, and these
 * keep the passes of all conditions together near what the worst single condition costs (docs/architecture.md,
 * Tables: bounded statements).
 */

function spendJsonElements(state: State, n: number): void {
  state.spent.jsonElements += n;
  if (state.spent.jsonElements > TABLE_LIMITS.maxFilterJsonContainsElements) {
    throw bad(`filter's json $contains operands have more than ${TABLE_LIMITS.maxFilterJsonContainsElements} array elements in all `
      + '(each is looked for through the whole array of every row; an operand without arrays counts one)');
  }
}

function spendSubstring(state: State, characters: number): void {
  state.spent.substrings++;
  state.spent.substringCharacters += characters;
  if (state.spent.substrings > TABLE_LIMITS.maxFilterSubstrings) {
    throw bad(`filter has more than ${TABLE_LIMITS.maxFilterSubstrings} substring and pattern conditions ($contains, $ncontains, $startsWith, $endsWith and the $like family on text and ids)`);
  }
  if (state.spent.substringCharacters > TABLE_LIMITS.maxFilterSubstringCharacters) {
    throw bad(`filter's substring and pattern operands ($contains, $ncontains, $startsWith, $endsWith and the $like family on text and ids) are longer than ${TABLE_LIMITS.maxFilterSubstringCharacters} characters in all`);
  }
}

function spendInValues(state: State, n: number): void {
  state.spent.inValues += n;
  if (state.spent.inValues > TABLE_LIMITS.maxFilterInValues) {
    throw bad(`filter's $in and $nin lists have more than ${TABLE_LIMITS.maxFilterInValues} values in all`);
  }
}

/** A field's condition: a bare value (equality) or an object of operators (ANDed). */
function fieldCondition(state: State, name: string, spec: unknown, nonNull: Set<string> | null): string {
  const c = column(state, name, 'filter');
  const ops: [string, unknown][] = isPlainObject(spec) && Object.keys(spec).some((k) => k.startsWith('$'))
    ? Object.entries(spec)
    : [['$eq', spec]];
  if (ops.length === 0) throw bad(`Empty condition for "${name}"`, name);
  const parts: string[] = [];
  for (const [op, v] of ops) {
    if (!op.startsWith('$')) throw bad(`Condition for "${name}" mixes operators and plain keys ("${op.slice(0, 40)}")`, name);
    if (!isOperator(op)) throw invalidOperator(op);
    count(state);
    if (typeof c === 'string') {
      parts.push(systemCondition(state, c, op, v));
    } else {
      const r = userCondition(state, c, op, v);
      if (r.excludesNull && nonNull) nonNull.add(c.name);
      parts.push(r.sql);
    }
  }
  return parts.length === 1 ? parts[0] : `(${parts.join(' AND ')})`;
}

function group(state: State, filter: Record<string, unknown>, depth: number, nonNull: Set<string> | null): string {
  if (depth > TABLE_LIMITS.maxFilterDepth) throw bad(`filter is nested deeper than ${TABLE_LIMITS.maxFilterDepth} levels`);
  const parts: string[] = [];
  for (const [key, value] of Object.entries(filter)) {
    if (key === '$and' || key === '$or') {
      if (!Array.isArray(value) || value.length === 0) throw bad(`${key} expects a non-empty array of filters`);
      const subs = value.map((sub) => {
        if (!isPlainObject(sub)) throw bad(`${key} expects an array of filter objects`);
        // Inside $and the top-level conjunction continues; inside $or nothing is implied.
        return group(state, sub, depth + 1, key === '$and' ? nonNull : null);
      });
      parts.push(subs.length === 1 ? subs[0] : `(${subs.join(key === '$and' ? ' AND ' : ' OR ')})`);
    } else if (key.startsWith('$')) {
      throw invalidOperator(key);
    } else {
      parts.push(fieldCondition(state, key, value, nonNull));
    }
  }
  if (parts.length === 0) return 'TRUE';
  return parts.length === 1 ? parts[0] : `(${parts.join(' AND ')})`;
}

/**
 * Compiles a filter object. Parameters are appended to `params`. User columns are read through
 * `dataAlias`.data, the row's own columns through `alias`.
 */
export function compileFilter(
  filter: Record<string, unknown> | undefined,
  columns: Column[],
  params: SqlParams,
  alias = '',
  dataAlias = alias,
): CompiledFilter {
  const nonNull = new Set<string>();
  if (!filter) return { sql: 'TRUE', nonNull, dataReads: 0 };
  const state: State = {
    params, columns: new Map(columns.map((c) => [c.name, c])), alias: dataAlias, rowAlias: alias, conditions: 0,
    spent: { jsonElements: 0, substrings: 0, substringCharacters: 0, inValues: 0 },
  };
  const sql = group(state, filter, 1, nonNull);
  // A filter from a request body or a table block has no query string's length bound. After compiling, so that a
  // filter past a bound above is told which; measured without building its text, and never further than the bound.
  if (measureJson(filter, TABLE_LIMITS.maxFilterBytes).bytes > TABLE_LIMITS.maxFilterBytes) {
    throw bad(`filter is larger than ${TABLE_LIMITS.maxFilterBytes} bytes of JSON`);
  }
  // Values are always parameters and column names are quoted literals, so every unquoted `data` here is a read.
  const reads = sql.match(new RegExp(`(?<![\\w.'])${dataAlias ? `${dataAlias}\\.` : ''}data\\b`, 'g'))?.length ?? 0;
  return { sql, nonNull, dataReads: reads };
}

/** One ORDER BY key: an expression and its direction (with the null placement when not the default). */
export interface SortKey {
  expr: string;
  order: 'ASC' | 'DESC' | 'DESC NULLS LAST';
}

/**
 * Compiles a sort object `{col: "asc"|"desc", ...}` (key order = priority) to ORDER BY keys, ending
 * with the row position as a stable tiebreak (unique within a table, so the order is total). Nulls
 * sort last in both directions; on columns the filter already requires to be non-null, the default
 * null placement is used so that a descending sort can walk an index backwards.
 */
export function compileSortKeys(
  sort: Record<string, unknown> | undefined,
  columns: Column[],
  nonNull: Set<string> = new Set(),
  alias = '',
  dataAlias = alias,
): SortKey[] {
  const a = alias ? `${alias}.` : '';
  const keys: SortKey[] = [];
  if (sort) {
    const entries = Object.entries(sort);
    if (entries.length > TABLE_LIMITS.maxSortKeys) throw bad(`sort has more than ${TABLE_LIMITS.maxSortKeys} keys`);
    const byName = new Map(columns.map((c) => [c.name, c]));
    for (const [name, dirRaw] of entries) {
      const dir = typeof dirRaw === 'string' ? dirRaw.toLowerCase() : dirRaw === 1 ? 'asc' : dirRaw === -1 ? 'desc' : undefined;
      if (dir !== 'asc' && dir !== 'desc') {
        throw bad(`Invalid sort direction for "${name.slice(0, 60)}": use "asc" or "desc"`, name);
      }
      if (isSystem(name)) {
        keys.push({ expr: `${a}${SYSTEM[name].sql}`, order: dir === 'asc' ? 'ASC' : 'DESC' });
        continue;
      }
      if (!NAME_PATTERN.test(name)) throw bad(`Invalid field name ${JSON.stringify(name.slice(0, 60))} in sort`, name);
      const c = byName.get(name);
      if (!c) throw bad(`Unknown column "${name}" in sort`, name);
      keys.push({ expr: sortExpression(c, dataAlias), order: dir === 'asc' ? 'ASC' : nonNull.has(name) ? 'DESC' : 'DESC NULLS LAST' });
    }
  }
  keys.push({ expr: `${a}position`, order: 'ASC' });
  return keys;
}

/** An ORDER BY list of sort keys. */
export const orderBySql = (keys: SortKey[]): string => keys.map((k) => `${k.expr} ${k.order}`).join(', ');

/** The ORDER BY list of compileSortKeys. */
export function compileSort(
  sort: Record<string, unknown> | undefined,
  columns: Column[],
  nonNull: Set<string> = new Set(),
  alias = '',
): string {
  return orderBySql(compileSortKeys(sort, columns, nonNull, alias));
}
