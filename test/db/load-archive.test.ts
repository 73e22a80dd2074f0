import fs from 'node:fs';
import { describe, expect, it } from 'vitest';
import { connectDatabase } from '../../src/db/connect.js';
import { pgliteTemplatePath } from '../support/templates.js';

// A dump given as `loadDataDir` (`weft restore`) moves to the database thread instead of being copied there:
// the caller's own buffer is emptied, and a view into a larger buffer is copied first, leaving the rest intact.
const mode = process.env.WEFT_TEST_DB === 'postgres' ? 'postgres' : 'pglite';

async function migrationsIn(archive: Uint8Array): Promise<number> {
  const db = await connectDatabase({ dataDir: '', inMemory: true, loadDataDir: archive });
  try {
    const [row] = await db.query<{ n: number }>('SELECT count(*)::int AS n FROM schema_migrations');
    return row.n;
  } finally {
    await db.close();
  }
}

describe.skipIf(mode !== 'pglite')('loading a dump into the embedded database', () => {
  it('takes a buffer of its own without copying it: the caller is left with an empty one', async () => {
    const archive = fs.readFileSync(pgliteTemplatePath());
    expect(archive.byteLength).toBeGreaterThan(1_000_000);
    expect(await migrationsIn(archive)).toBeGreaterThan(20);
    expect(archive.byteLength).toBe(0);
  });

  it('copies a view into a larger buffer, leaving that buffer whole', async () => {
    const dump = fs.readFileSync(pgliteTemplatePath());
    const padded = Buffer.concat([Buffer.from('prefix--'), dump]);
    const view = padded.subarray(8);
    expect(await migrationsIn(view)).toBeGreaterThan(20);
    expect(padded.byteLength).toBe(dump.byteLength + 8);
    expect(padded.subarray(0, 8).toString()).toBe('prefix--');
    expect(padded.subarray(8).equals(dump)).toBe(true);
  });
});
