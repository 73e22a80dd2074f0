import { storableText } from '../db/storable-text.js';
import { HttpError } from '../http/errors.js';
import { TABLE_LIMITS } from './limits.js';

/**
 * Select columns: their options (`{id, name}`), the cells that hold option ids (one, or a list with `multiple`),
 * and the pieces of SQL that read them by option (sort by name). Pure functions; columns.ts, filter-sql.ts,
 * column-sql.ts and column-service.ts call them. No imports from those files (they import this one).
 *
 * Options once were plain strings, and cells held the option's text. An option given as a string, or without an
 * id, takes its name as its id, so those cells stay valid as they are; columns stored that way are read as
 * `{id: s, name: s}` (`withSelectOptions`, called where the store reads columns).
 */

export interface SelectOption {
  /** What a cell holds: unique within the column, 1 to 100 characters, never changed by a rename. */
  id: string;
  /** What people see: unique within the column case-insensitively, trimmed, 1 to 100 characters. */
  name: string;
}

/** An option as a caller defines it: its name (the id is then the name), or `{id?, name}`. */
export type SelectOptionInput = string | { id?: string; name: string };

/** What this file reads of a column. */
interface SelectColumn {
  name: string;
  type: string;
  required?: boolean;
  options?: SelectOption[];
  multiple?: boolean;
}

/** A coerced value, or why the value does not fit (columns.ts turns it into a CellError). */
export type Coerced<T> = { value: T } | { error: string };

// ------------------------------------------------------------------------------------------------
// Definitions
// ------------------------------------------------------------------------------------------------

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * Validates a select column's options and returns them as `{id, name}`; throws 400 naming the problem.
 * An option without an id takes the id of the `previous` option (the column's options before a change) of the
 * same name when no other option claims it, else its name.
 */
export function normalizeSelectOptions(column: string, input: unknown, previous: SelectOption[] = []): SelectOption[] {
  if (!Array.isArray(input) || input.length === 0) throw new HttpError(400, `Select column "${column}" needs at least one option`);
  if (input.length > TABLE_LIMITS.maxSelectOptions) {
    throw new HttpError(400, `Select column "${column}" has more than ${TABLE_LIMITS.maxSelectOptions} options`);
  }
  const max = TABLE_LIMITS.maxSelectOptionLength;
  const names = new Set<string>();
  const given: { id?: string; name: string }[] = input.map((raw: unknown) => {
    let name: unknown = raw;
    let id: unknown;
    if (isRecord(raw)) {
      name = raw.name;
      id = raw.id;
    } else if (typeof raw !== 'string') {
      throw new HttpError(400, `Select column "${column}": options must be names or {id, name} objects`);
    }
    const n = typeof name === 'string' ? name.trim() : '';
    if (n.length === 0 || n.length > max || !storableText(n)) {
      throw new HttpError(400, `Select column "${column}": options must be 1 to ${max} characters`);
    }
    if (names.has(n.toLowerCase())) throw new HttpError(400, `Select column "${column}": duplicate option "${n}"`);
    names.add(n.toLowerCase());
    if (id === undefined || id === null) return { name: n };
    if (typeof id !== 'string' || id.length === 0 || id.length > max || !storableText(id)) {
      throw new HttpError(400, `Select column "${column}": option ids must be 1 to ${max} characters`);
    }
    return { id, name: n };
  });
  const ids = new Set<string>();
  const claim = (id: string) => {
    if (ids.has(id)) throw new HttpError(400, `Select column "${column}": duplicate option id "${id}"`);
    ids.add(id);
    return id;
  };
  for (const o of given) if (o.id !== undefined) claim(o.id);
  const explicit = new Set(ids);
  return given.map((o) => {
    if (o.id !== undefined) return { id: o.id, name: o.name };
    const kept = previous.find((p) => p.name === o.name)?.id;
    return { id: claim(kept !== undefined && !explicit.has(kept) && !ids.has(kept) ? kept : o.name), name: o.name };
  });
}

/** Options as stored: `{id, name}` objects, or strings from before options had ids (read as `{id: s, name: s}`). */
export function readStoredOptions(stored: unknown): SelectOption[] {
  if (!Array.isArray(stored)) return [];
  return stored.map((o: unknown) => (typeof o === 'string' ? { id: o, name: o } : (o as SelectOption)));
}

/**
 * A table as read from the store with its select columns in today's form: options as `{id, name}` and `multiple`
 * a boolean. The same object when nothing needed it.
 */
export function withSelectOptions<T extends { columns: SelectColumn[] }>(t: T): T {
  const stale = (c: SelectColumn) => c.type === 'select'
    && (typeof c.multiple !== 'boolean' || !Array.isArray(c.options) || c.options.some((o: unknown) => typeof o === 'string'));
  if (!t.columns.some(stale)) return t;
  return {
    ...t,
    columns: t.columns.map((c) => (stale(c) ? { ...c, options: readStoredOptions(c.options), multiple: c.multiple === true } : c)),
  };
}

export const sameOptions = (a: SelectOption[] | undefined, b: SelectOption[] | undefined): boolean =>
  JSON.stringify((a ?? []).map((o) => [o.id, o.name])) === JSON.stringify((b ?? []).map((o) => [o.id, o.name]));

// ------------------------------------------------------------------------------------------------
// Cells
// ------------------------------------------------------------------------------------------------

function preview(v: unknown): string {
  let s: string;
  try {
    s = JSON.stringify(v) ?? String(v);
  } catch {
    s = String(v);
  }
  return s.length > 60 ? `${s.slice(0, 57)}...` : s;
}

function notAnOption(column: SelectColumn, v: unknown): { error: string } {
  const options = column.options ?? [];
  const list = options.slice(0, 10).map((o) => JSON.stringify(o.name)).join(', ');
  return { error: `${preview(v)} is not one of the options (${list}${options.length > 10 ? ', ...' : ''})` };
}

/** The id of the option a value names: its id exactly, else its name exactly, else its name in any case. */
export function optionIdOf(column: SelectColumn, v: unknown): Coerced<string> {
  if (typeof v !== 'string' && !(typeof v === 'number' && Number.isFinite(v))) {
    const what = v === null ? 'null' : Array.isArray(v) ? 'an array' : typeof v === 'object' ? 'an object' : `a ${typeof v}`;
    return { error: `expected one of the options, got ${what}` };
  }
  const raw = String(v);
  const s = raw.trim();
  const options = column.options ?? [];
  const found = options.find((o) => o.id === raw) ?? options.find((o) => o.id === s) ?? options.find((o) => o.name === s)
    ?? options.find((o) => o.name.toLowerCase() === s.toLowerCase());
  return found ? { value: found.id } : notAnOption(column, v);
}

/**
 * A select cell as stored: an option id, or with `multiple` a list of ids (a lone value is a list of one;
 * duplicates dropped, order kept; `[]` allowed).
 */
export function coerceSelectValue(column: SelectColumn, v: unknown): Coerced<string | string[]> {
  if (!column.multiple) return optionIdOf(column, v);
  const ids: string[] = [];
  for (const x of Array.isArray(v) ? v : [v]) {
    const r = optionIdOf(column, x);
    if ('error' in r) return r;
    if (!ids.includes(r.value)) ids.push(r.value);
  }
  return { value: ids };
}

const nameOf = (column: SelectColumn, id: unknown): unknown => column.options?.find((o) => o.id === id)?.name ?? id;

/**
 * What a select cell shows: its option's name, or the names of its list joined with ", " (a value that is no
 * option's id as it is). What the cell becomes when the column changes to another type; `asList` keeps a list.
 */
export function selectCellText(column: SelectColumn, v: unknown, asList = false): unknown {
  if (!Array.isArray(v)) return nameOf(column, v);
  const names = v.map((x) => nameOf(column, x));
  return asList ? names : names.map((x) => (typeof x === 'string' ? x : JSON.stringify(x))).join(', ');
}

/**
 * A multiple select cell as a single select's (`multiple` turned off): `[x]` is `x`, `[]` no value (null), a list
 * of more than one is refused. A required column keeps a value.
 */
export function singleOfMultiple(column: SelectColumn, v: unknown): Coerced<string | null> {
  if (!Array.isArray(v)) return optionIdOf(column, v);
  if (v.length > 1) return { error: `holds ${v.length} options` };
  if (v.length === 0) return column.required ? { error: 'holds no option, and the column is required' } : { value: null };
  return optionIdOf(column, v[0]);
}

// ------------------------------------------------------------------------------------------------
// Filters and sorts
// ------------------------------------------------------------------------------------------------

/**
 * Whether `text` matches `pattern` whose only wildcard is `*` (any run of characters), over code points. The
 * classic two-pointer walk that goes back only to the last `*`: at most text x pattern steps. Not a regular
 * expression: V8's backtracks, and a tenant's `a*a*a*a*a*b` against a long option name took seconds per call.
 */
function wildcardMatches(text: string, pattern: string): boolean {
  const s = [...text];
  const p = [...pattern];
  let i = 0;
  let j = 0;
  let star = -1;
  let mark = 0;
  while (i < s.length) {
    if (j < p.length && p[j] !== '*' && p[j] === s[i]) {
      i++;
      j++;
    } else if (j < p.length && p[j] === '*') {
      star = j++;
      mark = i;
    } else if (star !== -1) {
      j = star + 1;
      i = ++mark;
    } else {
      return false;
    }
  }
  while (j < p.length && p[j] === '*') j++;
  return j === p.length;
}

/**
 * The ids of the options whose name matches a substring or pattern operator (as those operators match text: the
 * substring ones in any case, `*` the `$like` family's wildcard over the whole name). Select cells hold ids, so
 * these operators look at the names, which are few, and the filter compares the cell with the ids found.
 */
export function optionIdsMatching(column: SelectColumn, op: string, operand: string): string[] {
  const folded = operand.toLowerCase();
  const matches = (name: string): boolean => {
    switch (op) {
      case '$contains':
        return name.toLowerCase().includes(folded);
      case '$startsWith':
        return name.toLowerCase().startsWith(folded);
      case '$endsWith':
        return name.toLowerCase().endsWith(folded);
      case '$ilike':
      case '$nilike':
        return wildcardMatches(name.toLowerCase(), folded);
      default:
        return wildcardMatches(name, operand);
    }
  };
  return (column.options ?? []).filter((o) => matches(o.name)).map((o) => o.id);
}

/** Code point order, as text sorts in the database (`COLLATE "C"`, string columns' order). */
function byCodePoints(a: string, b: string): number {
  const x = [...a];
  const y = [...b];
  for (let i = 0; i < Math.min(x.length, y.length); i++) {
    const d = (x[i].codePointAt(0) ?? 0) - (y[i].codePointAt(0) ?? 0);
    if (d !== 0) return d;
  }
  return x.length - y.length;
}

/** An SQL string literal of any storable text (E'' form: the same whatever standard_conforming_strings says). */
function textLiteral(s: string): string {
  if (!storableText(s)) throw new Error('unstorable option id');
  return `E'${s.replace(/\\/g, '\\\\').replace(/'/g, "''")}'`;
}

/**
 * The sort key of a select cell: the rank of its option's name (in code point order, as text sorts) among the
 * column's options; `cellText` is the SQL of the id to rank (a multiple cell's first). Null for no value and for
 * a value that is no option's id, so such cells sort last as nulls do. Ids travel as literals, escaped.
 */
export function optionRankSql(column: SelectColumn, cellText: string): string {
  const ids = [...(column.options ?? [])].sort((a, b) => byCodePoints(a.name, b.name) || byCodePoints(a.id, b.id)).map((o) => o.id);
  return `array_position(ARRAY[${ids.map(textLiteral).join(', ')}]::text[], ${cellText})`;
}
