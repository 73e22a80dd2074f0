import fs from 'node:fs';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import { connectDatabase } from '../../src/db/connect.js';
import { pgliteTemplateDir, pgliteTemplatePath, postgresUrlFor } from '../support/templates.js';
import { databaseConformance } from './conformance.js';
import { runTempDir } from '../support/temp-dirs.js';

// Each adapter runs once: PGlite in the `pglite` project, `pg` in the `postgres` project (which
// exists when TEST_DATABASE_URL is set).
// (Read like test/support/harness.ts's dbMode, without importing the server.)
const mode = process.env.WEFT_TEST_DB === 'postgres' ? 'postgres' : 'pglite';

databaseConformance(
  'PGlite',
  // The migrated template (built by the global setup) loads in under a second; initdb takes 7 to 11.
  () => connectDatabase({ dataDir: '', inMemory: true, loadDataDir: new Blob([fs.readFileSync(pgliteTemplatePath())]) }),
  mode === 'pglite' ? undefined : 'PGlite runs in the pglite project',
);

const base = process.env.TEST_DATABASE_URL;
const created: string[] = [];
databaseConformance(
  'pg (PostgreSQL)',
  async () => {
    const name = `weft_db_${randomBytes(6).toString('hex')}`;
    const admin = await connectDatabase({ databaseUrl: base, dataDir: '' });
    await admin.exec(`CREATE DATABASE ${name}`);
    await admin.close();
    created.push(name);
    return connectDatabase({ databaseUrl: postgresUrlFor(base as string, name), dataDir: '' });
  },
  !base ? 'TEST_DATABASE_URL is not set' : mode !== 'postgres' ? 'pg runs in the postgres project' : undefined,
);

afterAll(async () => {
  if (!base || created.length === 0) return;
  const admin = await connectDatabase({ databaseUrl: base, dataDir: '' });
  for (const name of created) await admin.exec(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`).catch(() => undefined);
  await admin.close();
});

// The embedded fast path writes strings as quote-doubled literals (src/db/session-function.ts), complete
// only under standard_conforming_strings: a data directory that turns it off is refused at open.
describe.skipIf(mode !== 'pglite')('the embedded database and standard_conforming_strings', () => {
  it('refuses to open a data directory that turns standard_conforming_strings off, saying why', async () => {
    const dir = runTempDir('scs-');
    try {
      fs.cpSync(pgliteTemplateDir(), dir, { recursive: true });
      const db = await connectDatabase({ dataDir: dir });
      await db.exec('ALTER SYSTEM SET standard_conforming_strings = off');
      await db.close();
      await expect(connectDatabase({ dataDir: dir })).rejects.toThrow(/standard_conforming_strings = off; Weft needs it on/);
      // Set back on, it opens again.
      fs.appendFileSync(path.join(dir, 'pgdata', 'postgresql.auto.conf'), "\nstandard_conforming_strings = 'on'\n");
      const again = await connectDatabase({ dataDir: dir });
      expect(await again.query("SELECT current_setting('standard_conforming_strings') AS v")).toEqual([{ v: 'on' }]);
      await again.close();
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  }, 60_000);
});
