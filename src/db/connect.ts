import fs from 'node:fs';
import path from 'node:path';
import type pg from 'pg';
import { isConnectionError, type Database, type Queryable } from './database.js';
import { connectPglite as connectPgliteThread, type RestartEvent } from './pglite-thread.js';
import { txQueryable } from './tx-queryable.js';

export interface ConnectOptions {
  databaseUrl?: string;
  dataDir: string;
  /**
   * A tarball made by `dumpDataDir`, loaded instead of running initdb (`weft restore`, tests). Its bytes move to
   * the database thread: the caller's buffer is left empty.
   */
  loadDataDir?: Uint8Array;
  /** Sync the embedded database's commits to disk (default true; WEFT_EMBEDDED_FSYNC). */
  fsync?: boolean;
  /** Keep PGlite in memory (tests); the data directory is not touched. */
  inMemory?: boolean;
  /** PostgreSQL `application_name` of the pool's connections (default `weft`; the URL's wins). */
  applicationName?: string;
  /** The embedded database's thread was started again to end a bounded transaction (pglite-thread.ts). */
  onRestart?: (event: RestartEvent) => void;
}

export async function connectDatabase(opts: ConnectOptions): Promise<Database> {
  if (opts.databaseUrl) return connectPostgres(opts.databaseUrl, opts.applicationName ?? 'weft');
  return connectPglite(opts);
}

/** int8 as a JS number when exact, a bigint beyond 2^53 (never a rounded number); as PGlite does. */
function parseInt8(v: string): number | bigint {
  const n = Number(v);
  return Number.isSafeInteger(n) ? n : BigInt(v);
}

// Classifications live beside the Database port (src/db/database.ts); re-exported for callers here.
export { isConnectionError };
export { compilePglite } from './pglite-thread.js';

async function connectPostgres(url: string, applicationName: string): Promise<Database> {
  const pgm = (await import('pg')).default;
  // Parsers per pool, not pg's global registry. numeric stays a string and is converted where read.
  const types = {
    getTypeParser: ((oid: number, format?: string) =>
      oid === 20 && format !== 'binary' ? parseInt8 : pgm.types.getTypeParser(oid, format as 'text')) as pg.CustomTypesConfig['getTypeParser'],
  };
  const config: pg.PoolConfig = { connectionString: url, max: 10, application_name: applicationName, types };
  const pool = new pgm.Pool(config);
  pool.on('error', () => undefined); // an idle client died: the pool drops it, the next query gets another
  let closing: Promise<void> | undefined;

  /**
   * One statement on a new connection outside the pool, used once after a connection error: the
   * pool's other idle connections may have been cut by the same event (a restart kills them all).
   */
  const onFreshClient = async <R>(use: (c: pg.Client) => Promise<R>): Promise<R> => {
    const client = new pgm.Client({ connectionString: url, application_name: applicationName, types });
    client.on('error', () => undefined); // reported through the pending query
    await client.connect();
    try {
      return await use(client);
    } finally {
      await client.end().catch(() => undefined);
    }
  };

  // A plain statement that fails because its connection was lost is retried once on a fresh
  // connection. Caveat: if the connection died after the server ran an autocommitted write but
  // before its answer arrived, that write runs twice; writes that must not repeat belong in `tx`
  // (a transaction is retried only when it failed at BEGIN, before any of its statements ran).
  const withRetry = async (text: string, params?: unknown[]): Promise<{ rows: unknown[] }> => {
    try {
      return await pool.query(text, params);
    } catch (err) {
      if (closing || !isConnectionError(err)) throw err;
      return onFreshClient((c) => c.query(text, params));
    }
  };

  const runTx = async <T>(client: pg.ClientBase, fn: (q: Queryable) => Promise<T>): Promise<{ value: T } | { err: unknown; began: boolean; broken: boolean }> => {
    let broken = false;
    let began = false;
    // Without a listener, a connection error while the client is checked out is an unhandled
    // 'error' event that kills the process.
    const onError = () => {
      broken = true;
    };
    client.on('error', onError);
    try {
      await client.query('BEGIN');
      began = true;
      const { q, failure } = txQueryable((t, p) => client.query(t, p), (t) => client.query(t));
      const value = await fn(q);
      const failed = failure();
      if (failed !== undefined) throw failed;
      await client.query('COMMIT');
      return { value };
    } catch (err) {
      if (isConnectionError(err)) broken = true;
      if (began && !broken) {
        await client.query('ROLLBACK').catch(() => {
          broken = true;
        });
      }
      return { err, began, broken };
    } finally {
      client.removeListener('error', onError);
    }
  };

  const base: Queryable = {
    async query<T>(text: string, params?: readonly unknown[]) {
      return (await withRetry(text, params ? [...params] : undefined)).rows as T[];
    },
    async exec(text: string) {
      await withRetry(text);
    },
  };
  const db: Database = {
    mode: 'postgres',
    ...base,
    async tx<T>(fn: (q: Queryable) => Promise<T>): Promise<T> {
      const client = await pool.connect();
      const out = await runTx(client, fn);
      if ('value' in out) {
        client.release();
        return out.value;
      }
      // A broken connection is destroyed, never handed to the next caller.
      client.release(out.broken ? (out.err instanceof Error ? out.err : true) : undefined);
      // Lost before any statement of fn ran: nothing happened, so once more on a fresh connection.
      if (!out.began && out.broken && !closing) {
        const again = await onFreshClient((c) => runTx(c, fn));
        if ('value' in again) return again.value;
        throw again.err;
      }
      throw out.err;
    },
    boundedTx<T>(timeoutMs: number, fn: (q: Queryable) => Promise<T>): Promise<T> {
      if (!Number.isSafeInteger(timeoutMs) || timeoutMs < 0) return Promise.reject(new Error(`invalid statement timeout ${timeoutMs}`));
      return db.tx(async (q) => {
        // A checked integer: SET takes no parameter.
        if (timeoutMs > 0) await q.query(`SET LOCAL statement_timeout = ${timeoutMs}`);
        return fn(q);
      });
    },
    async ping() {
      // Through the retry: a pooled connection cut by a past restart does not make a live server look away.
      await withRetry('SELECT 1');
    },
    poolStats: () => ({ total: pool.totalCount, idle: pool.idleCount, waiting: pool.waitingCount }),
    close() {
      closing ??= pool.end();
      return closing;
    },
  };
  return db;
}

/** True once an embedded data directory holds an initialised database (initdb has run in it). */
export function embeddedDatabaseExists(dataDir: string): boolean {
  return fs.existsSync(path.join(dataDir, 'pgdata', 'PG_VERSION'));
}

async function connectPglite(opts: ConnectOptions): Promise<Database> {
  let dataDir: string | undefined;
  if (!opts.inMemory) {
    dataDir = path.join(opts.dataDir, 'pgdata');
    fs.mkdirSync(dataDir, { recursive: true });
  }
  return connectPgliteThread({ dataDir, loadDataDir: opts.loadDataDir, fsync: opts.fsync, onRestart: opts.onRestart });
}
