import fs from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import type { Database } from '../../src/db/database.js';
import { connectPglite } from '../../src/db/pglite-thread.js';
import { pgliteTemplateDir } from '../support/templates.js';
import { runTempDir } from '../support/temp-dirs.js';

/**
 * The embedded database checkpoints as its log grows (src/db/pglite-checkpoint.ts): PGlite's single backend has
 * no checkpointer, and on its own it checkpointed only at shutdown, so pg_wal grew with every write and a
 * crash replayed all of it. Observed through PostgreSQL's own record: the last checkpoint's redo point.
 */
const opened: Database[] = [];
afterEach(async () => {
  for (const d of opened.splice(0)) await d.close();
});

async function onDisk(checkpoints: Parameters<typeof connectPglite>[0]['checkpoints']): Promise<Database> {
  const dir = runTempDir('checkpoint-');
  fs.cpSync(pgliteTemplateDir(), dir, { recursive: true });
  const d = await connectPglite({ dataDir: dir, fsync: false, vacuum: false, checkpoints });
  opened.push(d);
  return d;
}

const logPastCheckpoint = async (d: Database) =>
  Number((await d.query<{ behind: string }>(
    'SELECT (pg_current_wal_insert_lsn() - (SELECT redo_lsn FROM pg_control_checkpoint()))::text AS behind',
  ))[0].behind);

/** About 2 MB of log: 10 commits of 200 rows of 1 KB of text each. */
async function write(d: Database): Promise<void> {
  await d.exec('CREATE TABLE wal_rows (id int, body text)');
  for (let i = 0; i < 10; i++) await d.exec(`INSERT INTO wal_rows SELECT g, repeat(md5(g::text), 32) FROM generate_series(1, 200) AS g`);
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('embedded checkpoints', () => {
  it('checkpoint once the log past the last one outgrows the bound; without them the log only grows', async () => {
    const bound = 256 * 1024;
    const [on, off] = await Promise.all([onDisk({ intervalMs: 50, maxLogBytes: bound }), onDisk(false)]);
    await Promise.all([write(on), write(off)]);
    const offBehind = await logPastCheckpoint(off);
    expect(offBehind).toBeGreaterThan(6 * bound);
    // Bounded by the test's timeout, not by a guess of how long a check takes on a loaded machine.
    let onBehind = await logPastCheckpoint(on);
    while (onBehind > bound) {
      await on.exec('SELECT 1'); // a statement: an idle database is not looked at
      await sleep(50);
      onBehind = await logPastCheckpoint(on);
    }
    expect(onBehind).toBeLessThanOrEqual(bound);
    // Nothing checkpointed the other one meanwhile.
    expect(await logPastCheckpoint(off)).toBeGreaterThanOrEqual(offBehind);
    expect((await on.query<{ n: number }>('SELECT count(*)::int AS n FROM wal_rows'))[0].n).toBe(2_000);
  });
});
