// The filter builder's conditions and their translation into the Tables API's Mongo-style filter.
import { isNumeric, type Column, type ColumnType } from './api';

export interface Condition { id: number; column: string; op: string; value: string }
export type Match = 'all' | 'any';

export interface OpInfo { op: string; label: string; needsValue: boolean }

const EMPTY: OpInfo[] = [
  { op: '$isNull', label: 'is empty', needsValue: false },
  { op: '$isNotNull', label: 'is not empty', needsValue: false },
];
const ORDER: OpInfo[] = [
  { op: '$eq', label: '=', needsValue: true }, { op: '$ne', label: '≠', needsValue: true },
  { op: '$gt', label: '>', needsValue: true }, { op: '$gte', label: '≥', needsValue: true },
  { op: '$lt', label: '<', needsValue: true }, { op: '$lte', label: '≤', needsValue: true },
];

/**
 * Operators that make sense for a column type, in the order the menu shows them. On a select column of several
 * options per cell, equality is membership (the cell's list holds the option).
 */
export function opsFor(type: ColumnType, multiple = false): OpInfo[] {
  switch (type) {
    case 'number':
    case 'currency':
    case 'date':
      return [...ORDER, ...EMPTY];
    case 'boolean':
      return [{ op: '$eq', label: 'is', needsValue: true }, ...EMPTY];
    case 'select':
      if (multiple) {
        return [
          { op: '$eq', label: 'includes', needsValue: true }, { op: '$ne', label: 'does not include', needsValue: true },
          { op: '$empty', label: 'has none', needsValue: false }, { op: '$isNotNull', label: 'is not empty', needsValue: false },
        ];
      }
      return [{ op: '$eq', label: 'is', needsValue: true }, { op: '$ne', label: 'is not', needsValue: true }, ...EMPTY];
    case 'json':
      return [{ op: '$contains', label: 'contains', needsValue: true }, ...EMPTY];
    default:
      return [
        { op: '$contains', label: 'contains', needsValue: true }, { op: '$eq', label: 'equals', needsValue: true },
        { op: '$ne', label: 'does not equal', needsValue: true }, { op: '$startsWith', label: 'starts with', needsValue: true },
        { op: '$endsWith', label: 'ends with', needsValue: true }, ...EMPTY,
      ];
  }
}

/** A condition's typed operand; undefined when the text does not fit the column (the condition is skipped). */
function operand(col: Column, op: string, text: string): unknown {
  if (op === '$isNull' || op === '$isNotNull' || op === '$empty') return true;
  if (isNumeric(col.type)) {
    const n = Number(text);
    return text.trim() === '' || !Number.isFinite(n) ? undefined : n;
  }
  if (col.type === 'boolean') return text === 'true' ? true : text === 'false' ? false : undefined;
  if (col.type === 'json' && op === '$contains') {
    try {
      return JSON.parse(text) as unknown;
    } catch {
      return text;
    }
  }
  return text === '' ? undefined : text;
}

/** The API filter for the conditions that are complete; undefined when none is. */
export function toFilter(conditions: Condition[], columns: Column[], match: Match): Record<string, unknown> | undefined {
  const byName = new Map(columns.map((c) => [c.name, c]));
  const parts: Record<string, unknown>[] = [];
  for (const c of conditions) {
    const col = byName.get(c.column);
    if (!col) continue;
    const v = operand(col, c.op, c.value);
    if (v === undefined) continue;
    parts.push({ [col.name]: { [c.op]: v } });
  }
  if (parts.length === 0) return undefined;
  if (parts.length === 1) return parts[0];
  return match === 'all' ? { $and: parts } : { $or: parts };
}
