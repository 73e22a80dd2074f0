import { HttpError } from '../http/errors.js';
import type { Queryable } from '../db/database.js';
import { FilterError } from './filter-sql.js';
import * as store from './store.js';
import type { TableRow } from './store.js';

/** The HTTP errors Tables answers with for missing things and for filters it cannot compile. */

export const tableNotFound = (): HttpError => new HttpError(404, 'Table not found');
export const rowNotFound = (): HttpError => new HttpError(404, 'Row not found');

/** The workspace's table, or the 404 a missing or foreign one answers with. */
export async function requireTable(q: Queryable, workspaceId: string, tableId: string): Promise<TableRow> {
  const t = await store.findTable(q, workspaceId, tableId);
  if (!t) throw tableNotFound();
  return t;
}

/** A FilterError (from the pure filter compiler) as the 400 the API answers with; other errors unchanged. */
export function filterErrorToHttp(err: unknown): unknown {
  return err instanceof FilterError ? new HttpError(400, err.message) : err;
}

/** Runs filter / sort compilation, turning a FilterError into its 400. */
export function compilingFilter<T>(compile: () => T): T {
  try {
    return compile();
  } catch (err) {
    throw filterErrorToHttp(err);
  }
}
