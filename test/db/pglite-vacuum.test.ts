import fs from 'node:fs';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { Database } from '../../src/db/database.js';
import { connectPglite } from '../../src/db/pglite-thread.js';
import { EmbeddedVacuum, type VacuumTarget } from '../../src/db/pglite-vacuum.js';
import { pgliteTemplatePath } from '../support/templates.js';

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

// In memory, loaded from the suites' migrated template: an in-memory initdb cost each database 7 to 11 s.
const inMemory = (vacuum: Parameters<typeof connectPglite>[0]['vacuum']) =>
  connectPglite({ loadDataDir: fs.readFileSync(pgliteTemplatePath()), vacuum });

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

const untilVacuumed = async (d: Database) => {
  let state = await tableState(d);
  // Bounded by the test's timeout, not by a guess of how long a pass takes on a loaded machine.
  while (!state?.vacuumed) {
    await sleep(100);
    state = await tableState(d);
  }
  return state;
};

describe('embedded VACUUM', () => {
  it('after enough statements, every table is vacuumed: its rows counted, its vacuum recorded', async () => {
    db = await inMemory({ intervalMs: 100, minStatements: 5 });
    await churn(db);
    expect(await untilVacuumed(db)).toEqual({ reltuples: 500, vacuumed: true });
  });

  it('a disabled one is left alone while an enabled one beside it, with the same churn, is vacuumed', async () => {
    const off = await inMemory(false);
    try {
      db = await inMemory({ intervalMs: 100, minStatements: 5 });
      await Promise.all([churn(db), churn(off)]);
      await untilVacuumed(db);
      expect(await tableState(off)).toEqual({ reltuples: -1, vacuumed: false });
    } finally {
      await off.close();
    }
  });
});

describe('EmbeddedVacuum passes (fake timers)', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  const target = () => {
    const statements: string[] = [];
    const t: VacuumTarget = {
      exec: async (sql) => void statements.push(sql),
      query: async <T,>() => ({ rows: [{ name: 'a' }, { name: 'b' }] as T[] }),
    };
    return { t, statements };
  };

  it('an idle database (fewer statements than the threshold) is left alone, however long it waits', async () => {
    vi.useFakeTimers();
    const { t, statements } = target();
    const v = new EmbeddedVacuum(t, { intervalMs: 100, minStatements: 10 }, (err) => { throw err; });
    v.start();
    for (let i = 0; i < 9; i++) v.noteStatement();
    await vi.advanceTimersByTimeAsync(10_000);
    expect(statements).toEqual([]);
    v.noteStatement();
    await vi.advanceTimersByTimeAsync(100);
    expect(statements).toEqual(['VACUUM a', 'VACUUM b']);
    // The count starts again after a pass.
    await vi.advanceTimersByTimeAsync(10_000);
    expect(statements).toHaveLength(2);
    await v.stop();
  });

  it('stop ends the passes', async () => {
    vi.useFakeTimers();
    const { t, statements } = target();
    const v = new EmbeddedVacuum(t, { intervalMs: 100, minStatements: 1 }, (err) => { throw err; });
    v.start();
    await v.stop();
    v.noteStatement();
    await vi.advanceTimersByTimeAsync(1_000);
    expect(statements).toEqual([]);
  });
});
