// The embedded database's first start on an empty data directory: from the build's template, or by initdb in a
// child process; then a reopen of what it wrote.
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { connectDatabase, embeddedDatabaseExists } from '../../src/db/connect.js';
import { createEmbeddedDatabase } from '../../src/db/create-embedded.js';
import { copyTemplate, currentTemplate, schemaFingerprint, templatesDir } from '../../src/db/embedded-template.js';
import { migrate } from '../../src/db/migrate.js';
import { runTempDir } from '../support/temp-dirs.js';

const mode = process.env.WEFT_TEST_DB === 'postgres' ? 'postgres' : 'pglite';
const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) fs.rmSync(d, { recursive: true, force: true });
});

describe.skipIf(mode !== 'pglite')('the embedded database on an empty data directory', () => {
  // initdb runs here, in the child (the other suites copy a template): seconds on a quiet machine, more on a
  // busy one. What the child wrote is then read by a reopen in this process.
  it('without a template, a first start creates and migrates the database in a child process, which reports its failure', { timeout: 300_000 }, async () => {
    const dir = runTempDir('first-start-');
    dirs.push(dir);
    await createEmbeddedDatabase(dir, { template: false });
    expect(embeddedDatabaseExists(dir)).toBe(true);
    const db = await connectDatabase({ dataDir: dir });
    try {
      // Every migration was applied by the child: none is left for this process.
      expect(await migrate(db)).toEqual([]);
      expect((await db.query<{ n: number }>('SELECT count(*)::int AS n FROM schema_migrations'))[0].n).toBeGreaterThan(20);
    } finally {
      await db.close();
    }

    const notADirectory = path.join(dir, 'a-file');
    fs.writeFileSync(notADirectory, 'x');
    await expect(createEmbeddedDatabase(notADirectory, { template: false })).rejects.toThrow(/creating the embedded database failed \(exit code 1\): .*(EEXIST|ENOTDIR)/s);
  });

  it('a first start copies the build\'s template of the current migrations, whole or not at all', { timeout: 300_000 }, async () => {
    // `npm run build` makes it (scripts/build-db-template.mjs), named by the migrations' fingerprint.
    const template = currentTemplate();
    expect(template).toBe(path.join(templatesDir(), schemaFingerprint()));
    const dir = runTempDir('first-start-');
    dirs.push(dir);
    await createEmbeddedDatabase(dir);
    expect(embeddedDatabaseExists(dir)).toBe(true);
    expect(fs.readdirSync(dir)).toEqual(['pgdata']); // no half-copied folder left beside it
    const db = await connectDatabase({ dataDir: dir });
    try {
      expect(await migrate(db)).toEqual([]);
      // A database of its own: what this one writes is not in the template.
      await db.exec('CREATE TABLE only_here (v int)');
    } finally {
      await db.close();
    }
    // The second one finds what a crashed copy left (another process's partial folder) and clears it.
    const second = runTempDir('first-start-');
    dirs.push(second);
    fs.mkdirSync(path.join(second, 'pgdata.creating-999999', 'base'), { recursive: true });
    await createEmbeddedDatabase(second);
    expect(fs.readdirSync(second)).toEqual(['pgdata']);
    const again = await connectDatabase({ dataDir: second });
    try {
      expect(await again.query("SELECT 1 FROM pg_tables WHERE tablename = 'only_here'")).toEqual([]);
    } finally {
      await again.close();
    }

    // Where `cp` and `sync` are missing, Node's own copy and an fsync per file do the same.
    const bare = runTempDir('first-start-');
    dirs.push(bare);
    const searchPath = process.env.PATH;
    process.env.PATH = '';
    try {
      await createEmbeddedDatabase(bare);
    } finally {
      process.env.PATH = searchPath;
    }
    expect(fs.readdirSync(bare)).toEqual(['pgdata']);
    const copied = await connectDatabase({ dataDir: bare });
    try {
      expect(await migrate(copied)).toEqual([]);
    } finally {
      await copied.close();
    }

    // A copy that fails at its last step (a database is already there) leaves no part of itself behind, and
    // the database that was there as it was.
    await expect(copyTemplate(template!, dir)).rejects.toThrow(/ENOTEMPTY|EEXIST/);
    expect(fs.readdirSync(dir)).toEqual(['pgdata']);
    const kept = await connectDatabase({ dataDir: dir });
    try {
      expect(await kept.query("SELECT 1 AS one FROM pg_tables WHERE tablename = 'only_here'")).toEqual([{ one: 1 }]);
    } finally {
      await kept.close();
    }
  });
});

