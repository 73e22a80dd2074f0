import { badRequest } from './errors.js';

/** Opaque keyset cursor: base64url of the last row's sort key; `o`, a list read either way: its direction. */
export interface CursorKey { t: string; id: string; o?: 'asc' | 'desc' }

export function encodeCursor(key: CursorKey): string {
  return Buffer.from(JSON.stringify(key)).toString('base64url');
}

export function decodeCursor(cursor: string | undefined): CursorKey | undefined {
  if (cursor === undefined || cursor === '') return undefined;
  try {
    const v = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as unknown;
    if (v && typeof v === 'object' && typeof (v as CursorKey).t === 'string' && typeof (v as CursorKey).id === 'string'
      && !Number.isNaN(Date.parse((v as CursorKey).t))) {
      return v as CursorKey;
    }
  } catch {
    // fall through
  }
  throw badRequest('Invalid cursor');
}

/** Given `limit + 1` rows, returns the page and the cursor of the next page (absent on the last). */
export function page<R>(rows: R[], limit: number, key: (r: R) => CursorKey): { data: R[]; nextCursor?: string } {
  if (rows.length <= limit) return { data: rows };
  const data = rows.slice(0, limit);
  return { data, nextCursor: encodeCursor(key(data[data.length - 1])) };
}
