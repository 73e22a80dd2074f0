import { HttpError } from '../http/errors.js';
import { FilterError } from './filter-sql.js';

/** The HTTP errors Tables answers with for missing things and for filters it cannot compile. */

export const tableNotFound = (): HttpError => new HttpError(404, 'Table not found');
export const rowNotFound = (): HttpError => new HttpError(404, 'Row not found');

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
