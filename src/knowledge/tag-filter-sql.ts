// Search filters compiled to SQL over a chunk `c` joined with its document `d`: the equality `filters`
// (document tags or chunk metadata, jsonb containment) and the typed `tagFilters` of the reference
// (document tag slots, each filter already resolved to its slot and type by tag-definitions.ts). Every
// value travels as a parameter; slot names come from the fixed list below, never from the request.

import { substringRegex } from '../db/substring-match.js';

export const TAG_SLOTS = {
  text: ['tag1', 'tag2', 'tag3', 'tag4', 'tag5', 'tag6', 'tag7'],
  number: ['number1', 'number2', 'number3', 'number4', 'number5'],
  date: ['date1', 'date2'],
  boolean: ['boolean1', 'boolean2', 'boolean3'],
} as const;

export type TagFieldType = keyof typeof TAG_SLOTS;
export type TagSlot = (typeof TAG_SLOTS)[TagFieldType][number];

export const TAG_OPERATORS = {
  text: ['eq', 'neq', 'contains', 'not_contains', 'starts_with', 'ends_with'],
  number: ['eq', 'neq', 'gt', 'gte', 'lt', 'lte', 'between'],
  date: ['eq', 'neq', 'gt', 'gte', 'lt', 'lte', 'between'],
  boolean: ['eq', 'neq'],
} as const satisfies Record<TagFieldType, readonly string[]>;

export type TagOperator = (typeof TAG_OPERATORS)[TagFieldType][number];

const ALL_SLOTS: ReadonlySet<string> = new Set(Object.values(TAG_SLOTS).flat());

export function slotType(slot: string): TagFieldType | undefined {
  for (const [type, slots] of Object.entries(TAG_SLOTS) as [TagFieldType, readonly string[]][]) if (slots.includes(slot)) return type;
  return undefined;
}

/** A tag filter checked against the base's definitions: a known slot, an operator of its type, typed values. */
export interface ResolvedTagFilter {
  slot: TagSlot;
  type: TagFieldType;
  operator: TagOperator;
  value: string | number | boolean;
  valueTo?: string | number;
}

export type TagFilterSql = readonly ResolvedTagFilter[];

const COMPARISON: Record<string, string> = { eq: '=', neq: '<>', gt: '>', gte: '>=', lt: '<', lte: '<=' };

function tagCondition(params: unknown[], f: ResolvedTagFilter): string {
  if (!ALL_SLOTS.has(f.slot)) throw new Error(`unknown tag slot ${f.slot}`);
  const raw = `(d.tag_slots->>'${f.slot}')`;
  const param = (value: unknown): string => {
    params.push(value);
    return `$${params.length}`;
  };
  switch (f.type) {
    case 'text': {
      const value = String(f.value);
      switch (f.operator) {
        // Regular expressions, not ILIKE: see db/substring-match.ts.
        case 'contains': return `${raw} ~* ${param(substringRegex(value, 'contains'))}`;
        case 'not_contains': return `${raw} !~* ${param(substringRegex(value, 'contains'))}`;
        case 'starts_with': return `${raw} ~* ${param(substringRegex(value, 'startsWith'))}`;
        case 'ends_with': return `${raw} ~* ${param(substringRegex(value, 'endsWith'))}`;
        default: return `lower(${raw}) ${COMPARISON[f.operator] ?? '='} lower(${param(value)})`;
      }
    }
    case 'number': {
      const column = `${raw}::float8`;
      if (f.operator === 'between') return `${column} BETWEEN ${param(f.value)}::float8 AND ${param(f.valueTo)}::float8`;
      return `${column} ${COMPARISON[f.operator] ?? '='} ${param(f.value)}::float8`;
    }
    case 'date': {
      const column = `${raw}::date`;
      if (f.operator === 'between') return `${column} BETWEEN ${param(f.value)}::date AND ${param(f.valueTo)}::date`;
      return `${column} ${COMPARISON[f.operator] ?? '='} ${param(f.value)}::date`;
    }
    case 'boolean':
      return `${raw}::boolean ${f.operator === 'neq' ? '<>' : '='} ${param(f.value)}::boolean`;
  }
}

/** " AND ..." conditions for a chunk query's WHERE (empty when nothing filters), pushing values onto `params`. */
export function tagFilterSql(params: unknown[], filters: Record<string, unknown> | undefined, tagFilters: TagFilterSql | undefined): string {
  let sql = '';
  if (filters && Object.keys(filters).length > 0) {
    params.push(JSON.stringify(filters));
    sql += ` AND (d.tags || c.metadata) @> $${params.length}::jsonb`;
  }
  for (const f of tagFilters ?? []) sql += ` AND ${tagCondition(params, f)}`;
  return sql;
}
