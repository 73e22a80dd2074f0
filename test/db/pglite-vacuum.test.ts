import { afterEach, describe, expect, it } from 'vitest';
import type { Database } from '../../src/db/database.js';
import { connectPglite } from '../../src/db/pglite-thread.js';

/**
 * The embedded database vacuums itself (src/db/pglite-vacuum.ts): PGlite has no autovacuum, and without a
 * VACUUM dead rows pile up and the planner never learns a table's size. Observed through PostgreSQL's own
 * records of a table: `pg_class.reltuples` is -1 until a VACUUM (or ANALYZE) counts the rows, and
 * `pg_stat_user_tables.last_vacuum` is set by each VACUUM.
 */
let db: Database | undefined;
afterEach(async () => {
  await db?.close();
  db = undefined;
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function churn(d: Database): Promise<void> {
  await d.exec('CREATE TABLE vac_rows (id int, v int)');
  await d.exec('INSERT INTO vac_rows SELECT g, 0 FROM generate_series(1, 500) AS g');
  for (let i = 0; i < 5; i++) await d.exec('UPDATE vac_rows SET v = v + 1');
}

const tableState = async (d: Database) =>
  (await d.query<{ reltuples: number; vacuumed: boolean }>(
    `SELECT c.reltuples::int AS reltuples, s.last_vacuum IS NOT NULL AS vacuumed
       FROM pg_class c JOIN pg_stat_user_tables s ON s.relid = c.oid WHERE c.relname = 'vac_rows'`,
  ))[0];

describe('embedded VACUUM', () => {
  it('after enough statements, every table is vacuumed: its rows counted, its vacuum recorded', async () => {
    db = await connectPglite({ vacuum: { intervalMs: 100, minStatements: 5 } });
    await churn(db);
    let state = await tableState(db);
    for (let i = 0; i < 50 && !state.vacuumed; i++) {
      await sleep(100);
      state = await tableState(db);
    }
    expect(state).toEqual({ reltuples: 500, vacuumed: true });
  });

  it('an idle database (fewer statements than the threshold) and a disabled one are left alone', async () => {
    for (const vacuum of [{ intervalMs: 100, minStatements: 10_000 }, false as const]) {
      db = await connectPglite({ vacuum });
      await churn(db);
      await sleep(600);
      expect(await tableState(db)).toEqual({ reltuples: -1, vacuumed: false });
      await db.close();
      db = undefined;
    }
  });
});
