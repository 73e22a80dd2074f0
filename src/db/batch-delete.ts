import type { Queryable } from './database.js';

/**
 * Deletes at most `batchSize` rows of `table` whose `column` is before `cutoff`, oldest first, and answers how
 * many went: one short statement of a retention sweep (runs/retention.ts), along an index on `column`.
 * `table` and `column` come from code, never from a request.
 */
export async function deleteOlderThan(q: Queryable, table: string, column: string, cutoff: Date, batchSize: number): Promise<number> {
  const rows = await q.query<{ n: number }>(
    `WITH gone AS (DELETE FROM ${table} WHERE id IN (
       SELECT id FROM ${table} WHERE ${column} < $1 ORDER BY ${column} LIMIT $2) RETURNING 1)
     SELECT count(*)::int AS n FROM gone`,
    [cutoff, batchSize],
  );
  return rows[0].n;
}
