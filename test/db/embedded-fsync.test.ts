import { afterEach, describe, expect, it } from 'vitest';
import { connectDatabase } from '../../src/db/connect.js';
import type { Database } from '../../src/db/database.js';
import { freshDatabase } from '../support/harness.js';

/**
 * WEFT_EMBEDDED_FSYNC (docs/architecture.md, "Embedded durability"): on by default, each commit of an embedded
 * data directory is synced to disk; off, for directories one can lose, nothing is synced and PostgreSQL knows it.
 * Either way the directory is the same database on the next open.
 */
let db: Database | undefined;
afterEach(async () => {
  await db?.close();
  db = undefined;
});

const setting = async (d: Database) =>
  (await d.query<{ fsync: string }>("SELECT current_setting('fsync') AS fsync"))[0]?.fsync;

describe('embedded database: syncing commits to disk', () => {
  it('syncs each commit by default, syncs nothing when turned off, and keeps the data either way', async () => {
    const { dataDir } = await freshDatabase();
    // Run in the PGlite project only (vitest.config.ts): PostgreSQL's own fsync setting is its operator's.
    if (!dataDir) throw new Error('an embedded data directory was expected');

    db = await connectDatabase({ dataDir, fsync: false });
    expect(await setting(db)).toBe('off');
    await db.exec('CREATE TABLE fsync_probe (n int)');
    for (let n = 0; n < 3; n++) await db.query('INSERT INTO fsync_probe VALUES ($1)', [n]);
    expect((await db.activity?.())?.fileSyncs).toBe(0);
    await db.close();

    db = await connectDatabase({ dataDir });
    expect(await setting(db)).toBe('on');
    const before = (await db.activity?.())?.fileSyncs ?? 0;
    for (let n = 3; n < 6; n++) await db.query('INSERT INTO fsync_probe VALUES ($1)', [n]);
    // Three autocommitted inserts, one after another: each commit syncs the write-ahead log.
    expect(((await db.activity?.())?.fileSyncs ?? 0) - before).toBeGreaterThanOrEqual(3);
    expect(await db.query('SELECT n FROM fsync_probe ORDER BY n')).toEqual([0, 1, 2, 3, 4, 5].map((n) => ({ n })));

    // Many commits at once, their syncs shared by commits that land together, a checkpoint between: each
    // answered write is there after the database is opened again.
    const many = Array.from({ length: 300 }, (_, i) => 100 + i);
    await Promise.all(many.map((n) => db!.query('INSERT INTO fsync_probe SELECT $1::int FROM generate_series(1, 1)', [n])));
    await db.exec('CHECKPOINT');
    await Promise.all(many.map((n) => db!.query('UPDATE fsync_probe SET n = n + 1000 WHERE n = $1', [n])));
    await db.close();
    db = await connectDatabase({ dataDir });
    const rows = await db.query<{ count: number; total: number }>('SELECT count(*)::int AS count, sum(n)::int AS total FROM fsync_probe');
    expect(rows).toEqual([{ count: 306, total: 15 + many.reduce((a, n) => a + n + 1000, 0) }]);
  });
});
