import fs from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { Database } from './database.js';

const migrationsDir = fileURLToPath(new URL('./migrations/', import.meta.url));

export function listMigrations(): { name: string; sql: string }[] {
  return fs
    .readdirSync(migrationsDir)
    .filter((f) => f.endsWith('.sql'))
    .sort()
    .map((name) => ({ name, sql: fs.readFileSync(migrationsDir + name, 'utf8') }));
}

/** Several API processes may start together on PostgreSQL: this advisory lock serializes their migrations. */
const lockMigrations = 'SELECT pg_advisory_xact_lock(872341)';

/** Applies pending SQL migrations in order, each in its own transaction. Returns the names applied. */
export async function migrate(db: Database): Promise<string[]> {
  await db.exec(`CREATE TABLE IF NOT EXISTS schema_migrations (
    name text PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())`);
  // Every start and every CLI command comes through here: read what is applied in one transaction and open
  // one per migration only for the rest (each checks again: another process may have applied it since).
  const already = await db.tx(async (q) => {
    if (db.mode === 'postgres') await q.query(lockMigrations);
    return new Set((await q.query<{ name: string }>('SELECT name FROM schema_migrations')).map((r) => r.name));
  });
  const applied: string[] = [];
  for (const m of listMigrations()) {
    if (already.has(m.name)) continue;
    const done = await db.tx(async (q) => {
      if (db.mode === 'postgres') await q.query(lockMigrations);
      const rows = await q.query('SELECT 1 FROM schema_migrations WHERE name = $1', [m.name]);
      if (rows.length > 0) return false;
      try {
        await q.exec(m.sql);
      } catch (err) {
        throw explainMigrationError(err, m.name);
      }
      await q.query('INSERT INTO schema_migrations (name) VALUES ($1)', [m.name]);
      return true;
    });
    if (done) applied.push(m.name);
  }
  return applied;
}

/** A PostgreSQL without pgvector fails the first migration: say what to install instead of only the driver's words. */
function explainMigrationError(err: unknown, migration: string): unknown {
  const message = err instanceof Error ? err.message : String(err);
  if (/vector\.control|extension "vector" is not available/.test(message)) {
    return new Error(`The PostgreSQL server has no pgvector extension, which Weft needs (migration ${migration}): install pgvector 0.8 or later on it (see the README, "Knowledge bases"). PostgreSQL said: ${message}`, { cause: err });
  }
  return err;
}
