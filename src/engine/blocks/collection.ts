// Shared helpers for container blocks: turning config values into item lists and counts.
import { formatInterpolated } from '../references.js';

function describe(value: unknown): string {
  if (value === null || value === undefined) return 'nothing';
  if (typeof value === 'string') return JSON.stringify(value.length > 60 ? `${value.slice(0, 60)}…` : value);
  return formatInterpolated(value).slice(0, 60);
}

/** Arrays as they are, objects as [key, value] entries, JSON strings parsed. */
export function toItems(value: unknown, field: string): unknown[] {
  let v = value;
  if (typeof v === 'string') {
    const s = v.trim();
    try {
      v = JSON.parse(s);
    } catch {
      throw new Error(`${field} must be an array or object; got ${describe(value)}`);
    }
  }
  if (Array.isArray(v)) return v;
  if (v !== null && typeof v === 'object') return Object.entries(v as Record<string, unknown>);
  throw new Error(`${field} must be an array or object; got ${describe(value)}`);
}

export function toCount(value: unknown, field: string): number {
  const n = typeof value === 'string' ? Number(value.trim()) : value;
  if (typeof n !== 'number' || !Number.isInteger(n) || n < 0) {
    throw new Error(`${field} must be a non-negative integer; got ${describe(value)}`);
  }
  return n;
}

export function isTruthy(value: unknown): boolean {
  return Boolean(value);
}
