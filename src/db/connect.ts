import fs from 'node:fs';
import path from 'node:path';
import type { Database, Queryable } from './database.js';

export interface ConnectOptions {
  databaseUrl?: string;
  dataDir: string;
  /** A tarball made by `dumpDataDir`, loaded instead of running initdb (tests). */
  loadDataDir?: Blob;
  /** Keep PGlite in memory (tests); the data directory is not touched. */
  inMemory?: boolean;
}

export async function connectDatabase(opts: ConnectOptions): Promise<Database> {
  if (opts.databaseUrl) return connectPostgres(opts.databaseUrl);
  return connectPglite(opts);
}

async function connectPostgres(url: string): Promise<Database> {
  const pg = (await import('pg')).default;
  // int8 (counts, sums) as JS numbers; numeric stays a string and is converted where read.
  pg.types.setTypeParser(20, (v: string) => Number(v));
  const pool = new pg.Pool({ connectionString: url, max: 10 });
  pool.on('error', () => undefined); // an idle client dying is reported on the next query
  const wrap = (c: { query: (t: string, p?: unknown[]) => Promise<{ rows: unknown[] }> }): Queryable => ({
    async query<T>(text: string, params?: readonly unknown[]) {
      const r = await c.query(text, params ? [...params] : undefined);
      return r.rows as T[];
    },
    async exec(text: string) {
      await c.query(text);
    },
  });
  const base = wrap(pool);
  return {
    mode: 'postgres',
    ...base,
    async tx(fn) {
      const client = await pool.connect();
      try {
        await client.query('BEGIN');
        const out = await fn(wrap(client));
        await client.query('COMMIT');
        return out;
      } catch (err) {
        await client.query('ROLLBACK').catch(() => undefined);
        throw err;
      } finally {
        client.release();
      }
    },
    async ping() {
      await pool.query('SELECT 1');
    },
    async close() {
      await pool.end();
    },
  };
}

async function connectPglite(opts: ConnectOptions): Promise<Database> {
  const { PGlite } = await import('@electric-sql/pglite');
  const { vector } = await import('@electric-sql/pglite-pgvector');
  let dataDir: string | undefined;
  if (!opts.inMemory) {
    dataDir = path.join(opts.dataDir, 'pgdata');
    fs.mkdirSync(dataDir, { recursive: true });
  }
  const db = await PGlite.create({
    dataDir,
    extensions: { vector },
    loadDataDir: opts.loadDataDir,
    relaxedDurability: false,
  });
  const wrap = (c: { query: (t: string, p?: unknown[]) => Promise<{ rows: unknown[] }>; exec: (t: string) => Promise<unknown> }): Queryable => ({
    async query<T>(text: string, params?: readonly unknown[]) {
      const r = await c.query(text, params ? [...params] : undefined);
      return r.rows as T[];
    },
    async exec(text: string) {
      await c.exec(text);
    },
  });
  const base = wrap(db);
  let closed = false;
  return {
    mode: 'pglite',
    ...base,
    tx: (fn) => db.transaction((t) => fn(wrap(t))),
    async ping() {
      await db.query('SELECT 1');
    },
    async close() {
      if (closed) return;
      closed = true;
      await db.close();
    },
    // Exposed for the test harness (template data directories).
    ...({ dumpDataDir: () => db.dumpDataDir('none') } as object),
  };
}
