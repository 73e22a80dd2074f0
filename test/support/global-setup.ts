import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import { connectDatabase } from '../../src/db/connect.js';
import { migrate } from '../../src/db/migrate.js';
import { runTempRoot } from './temp-dirs.js';
import { ensureCacheDir, pgliteTemplateDir, pgliteTemplatePath, postgresTemplateName, postgresUrlFor, runDatabasesPattern } from './templates.js';

/**
 * Builds the database templates once per run: a migrated PGlite data directory dumped to a tarball
 * (PGlite's initdb costs 7 to 11 s; loading the dump costs under 1 s) and, with TEST_DATABASE_URL,
 * a migrated PostgreSQL template database that each suite copies.
 */
export async function ensureTemplates(): Promise<void> {
  ensureCacheDir();
  const tarPath = pgliteTemplatePath();
  if (!fs.existsSync(tarPath)) {
    const db = await connectDatabase({ dataDir: '', inMemory: true });
    await migrate(db);
    const dump = (db as unknown as { dumpDataDir: () => Promise<Blob> }).dumpDataDir;
    const blob = await dump();
    fs.writeFileSync(tarPath + '.tmp', Buffer.from(await blob.arrayBuffer()));
    fs.renameSync(tarPath + '.tmp', tarPath);
    await db.close();
  }
  const dir = pgliteTemplateDir();
  if (!fs.existsSync(dir)) {
    const tmp = `${dir}.tmp-${process.pid}`;
    fs.rmSync(tmp, { recursive: true, force: true });
    const db = await connectDatabase({ dataDir: tmp, loadDataDir: fs.readFileSync(tarPath) });
    await db.close();
    fs.renameSync(tmp, dir);
  }
  const base = process.env.TEST_DATABASE_URL;
  if (base) {
    const admin = await connectDatabase({ databaseUrl: base, dataDir: '' });
    const name = postgresTemplateName();
    const exists = await admin.query('SELECT 1 FROM pg_database WHERE datname = $1', [name]);
    if (exists.length === 0) {
      // Built under a temporary name and renamed once migrated: a run that dies half-way (or a second
      // run starting at the same time) never leaves a half-migrated template under the real name.
      const tmp = `${name}_tmp_${process.pid}`;
      await admin.exec(`DROP DATABASE IF EXISTS ${tmp}`);
      await admin.exec(`CREATE DATABASE ${tmp}`);
      const tpl = await connectDatabase({ databaseUrl: postgresUrlFor(base, tmp), dataDir: '' });
      await migrate(tpl);
      await tpl.close();
      try {
        await admin.exec(`ALTER DATABASE ${tmp} RENAME TO ${name}`);
      } catch (err) {
        // Another run renamed its copy first: keep that one.
        await admin.exec(`DROP DATABASE IF EXISTS ${tmp}`);
        if ((await admin.query('SELECT 1 FROM pg_database WHERE datname = $1', [name])).length === 0) throw err;
      }
    }
    await admin.close();
  }
}

/** Drops the PostgreSQL databases that run `run` created (templates.ts, `testDatabaseName`). */
async function dropRunDatabases(base: string, run: string): Promise<void> {
  const admin = await connectDatabase({ databaseUrl: base, dataDir: '' });
  try {
    const rows = await admin.query<{ datname: string }>('SELECT datname FROM pg_database WHERE datname ~ $1', [runDatabasesPattern(run)]);
    for (const { datname } of rows) {
      // FORCE: a server a failed test left running still holds connections.
      await admin.exec(`DROP DATABASE IF EXISTS ${datname} WITH (FORCE)`).catch((err: unknown) => {
        console.warn(`test teardown: could not drop ${datname}: ${err instanceof Error ? err.message : String(err)}`);
      });
    }
  } finally {
    await admin.close();
  }
}

export default async function setup(): Promise<() => Promise<void>> {
  // Kept when already set (each project of the run calls this, and the forks must see one id), if it can be
  // part of a database name.
  const given = process.env.WEFT_TEST_RUN ?? '';
  const run = /^[0-9a-f]{8}$/.test(given) ? given : randomBytes(4).toString('hex');
  process.env.WEFT_TEST_RUN = run;
  await ensureTemplates();
  return async () => {
    const base = process.env.TEST_DATABASE_URL;
    if (base) await dropRunDatabases(base, run);
    // The suites' data directories and files (test/support/temp-dirs.ts).
    fs.rmSync(runTempRoot(run), { recursive: true, force: true });
  };
}
