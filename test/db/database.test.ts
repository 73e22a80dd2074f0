import fs from 'node:fs';
import { randomBytes } from 'node:crypto';
import { afterAll } from 'vitest';
import { connectDatabase } from '../../src/db/connect.js';
import { pgliteTemplateDir, postgresUrlFor } from '../support/templates.js';
import { runTempDir } from '../support/temp-dirs.js';
import { databaseConformance } from './conformance.js';

// Each adapter runs once: PGlite in the `pglite` project, `pg` in the `postgres` project (which
// exists when TEST_DATABASE_URL is set).
// (Read like test/support/harness.ts's dbMode, without importing the server.)
const mode = process.env.WEFT_TEST_DB === 'postgres' ? 'postgres' : 'pglite';

databaseConformance(
  'PGlite',
  // A copy of the migrated template (built by the global setup) opens in about a second; initdb takes 7 to 11.
  // On disk, as a server's is: only then can a bounded transaction be cut short (src/db/pglite-thread.ts).
  () => {
    const dir = runTempDir('conformance-');
    fs.cpSync(pgliteTemplateDir(), dir, { recursive: true });
    return connectDatabase({ dataDir: dir });
  },
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
