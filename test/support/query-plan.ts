import type { Database, Queryable } from '../../src/db/database.js';

/**
 * The plan `db` makes for the one statement `send` issues (captured, not run): for tests that a statement
 * finds its rows by index however large its tables grow. With `generic`, the plan made without the values
 * (what a prepared statement's plan cache may settle on after five calls), or undefined where the server
 * cannot show it (`EXPLAIN (GENERIC_PLAN)` is PostgreSQL 16 and later; the embedded database is 17).
 */
export async function planOf(db: Database, send: (q: Queryable) => Promise<unknown>): Promise<string>;
export async function planOf(db: Database, send: (q: Queryable) => Promise<unknown>, generic: true): Promise<string | undefined>;
export async function planOf(db: Database, send: (q: Queryable) => Promise<unknown>, generic = false): Promise<string | undefined> {
  let sent: { text: string; params: readonly unknown[] } | undefined;
  await send({
    query: async <T>(text: string, params: readonly unknown[] = []) => {
      sent = { text, params };
      return [] as T[];
    },
    exec: async () => undefined,
  });
  if (!sent) throw new Error('the statement was not sent');
  if (generic) {
    const [{ v }] = await db.query<{ v: number }>("SELECT current_setting('server_version_num')::int AS v");
    if (v < 160000) return undefined;
  }
  const rows = generic
    ? await db.query<{ 'QUERY PLAN': string }>(`EXPLAIN (GENERIC_PLAN) ${sent.text}`)
    : await db.query<{ 'QUERY PLAN': string }>(`EXPLAIN ${sent.text}`, sent.params);
  return rows.map((r) => r['QUERY PLAN']).join('\n');
}
