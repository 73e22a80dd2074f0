// Query parameters the reference service reads loosely (flags as true/false/1/0, dates as any ISO 8601
// date or timestamp, list sizes clamped rather than refused), parsed here so that every route reads them
// the same way and answers a value it cannot read with a 400 naming the parameter.
import { HttpError } from './errors.js';

/** Boolean query flags accept true/false/1/0, case-insensitive and trimmed. */
export function queryFlag(name: string, value: string | undefined): boolean | undefined {
  if (value === undefined) return undefined;
  const v = value.trim().toLowerCase();
  if (v === 'true' || v === '1') return true;
  if (v === 'false' || v === '0') return false;
  throw new HttpError(400, `${name} must be true, false, 1 or 0`);
}

/** A calendar date (taken as UTC midnight) or a timestamp with its offset. Year 0 is refused: PostgreSQL has none. */
const isoDateOrTimestamp = /^\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:?\d{2}))?$/;

/** An ISO 8601 date or timestamp query parameter, as the Date it names. */
export function queryDate(name: string, value: string | undefined): Date | undefined {
  if (value === undefined || value === '') return undefined;
  const ms = Date.parse(value);
  if (!isoDateOrTimestamp.test(value) || value.startsWith('0000') || Number.isNaN(ms)) {
    throw new HttpError(400, `${name} must be an ISO 8601 date or timestamp, e.g. 2026-01-31 or 2026-01-31T12:00:00Z`);
  }
  return new Date(ms);
}

/**
 * A page size read as the reference service reads it: cut to a whole number and clamped to [1, max] rather
 * than refused; `fallback` when absent (the schema has already refused what is not a finite number).
 */
export function clampedLimit(value: number | undefined, fallback: number, max: number): number {
  if (value === undefined) return fallback;
  return Math.min(max, Math.max(1, Math.trunc(value)));
}

/** A comma-separated query parameter's values, trimmed, empty ones dropped. */
export const queryList = (value: string | undefined): string[] => (value ?? '').split(',').map((s) => s.trim()).filter(Boolean);
