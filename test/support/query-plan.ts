import type { Database, Queryable } from '../../src/db/database.js';

/**
 * The plan `db` makes for the one statement `send` issues (captured, not run): for tests that a statement
 * finds its rows by index however large its tables grow.
 */
export async function planOf(db: Database, send: (q: Queryable) => Promise<unknown>): Promise<string> {
  let sent: { text: string; params: readonly unknown[] } | undefined;
  await send({
    query: async <T>(text: string, params: readonly unknown[] = []) => {
      sent = { text, params };
      return [] as T[];
    },
    exec: async () => undefined,
  });
  if (!sent) throw new Error('the statement was not sent');
  const rows = await db.query<{ 'QUERY PLAN': string }>(`EXPLAIN ${sent.text}`, sent.params);
  return rows.map((r) => r['QUERY PLAN']).join('\n');
}
