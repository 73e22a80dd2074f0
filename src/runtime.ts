import fs from 'node:fs';
import path from 'node:path';
import pino, { type Logger } from 'pino';
import type { Config } from './config.js';
import { compilePglite, connectDatabase, embeddedDatabaseExists, type ConnectOptions } from './db/connect.js';
import { createEmbeddedDatabase } from './db/create-embedded.js';
import type { RestartEvent } from './db/pglite-thread.js';
import { retryWhileUnavailable, type Database } from './db/database.js';
import { migrate } from './db/migrate.js';
import { readServerInfo } from './admin/server-info.js';

/** Logs go to stderr so that `--json` output on stdout stays a clean document. */
export function createLogger(config: Config): Logger {
  return pino({ level: config.logLevel, base: { service: 'weft' } }, pino.destination(2));
}

/**
 * In embedded mode only one process may open the data directory. The lock file holds the owner's pid
 * and its start time; a lock whose process is gone, a zombie, or a different process that reused the
 * pid is taken over at once (a restart right after `kill -9` must not be refused).
 */
export function lockDataDir(config: Config): () => void {
  if (config.databaseUrl) return () => undefined;
  ownerOnly(config.dataDir);
  const file = path.join(config.dataDir, 'weft.lock');
  const mine = lockOwner(process.pid);
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      fs.writeFileSync(file, mine, { flag: 'wx' });
      return () => {
        try {
          if (fs.readFileSync(file, 'utf8') === mine) fs.unlinkSync(file);
        } catch {
          // already gone
        }
      };
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      const holder = fs.readFileSync(file, 'utf8').trim();
      const pid = Number(holder.split(':')[0]);
      if (pid && pid !== process.pid && holdsLock(holder, pid)) throw new DataDirInUseError(config.dataDir, pid);
      fs.unlinkSync(file);
    }
  }
  throw new Error(`Could not lock ${config.dataDir}`);
}

/** The data directory is held by another live process: a running server, or another command. */
export class DataDirInUseError extends Error {
  constructor(readonly dataDir: string, readonly pid: number) {
    const server = readServerInfo(dataDir);
    super(server?.pid === pid
      ? `The data directory ${dataDir} is in use by process ${pid}, a Weft server running at ${server.url} since ${server.startedAt}. ` +
          'Stop it first (CLI commands reach it through its admin socket meanwhile).'
      : `The data directory ${dataDir} is in use by process ${pid} (a Weft server starting, or another weft command). ` +
          'Stop it first, or set DATABASE_URL to use PostgreSQL, where commands work while the server runs.');
  }
}

/**
 * The pid of the live process holding an embedded data directory's lock, if any (a stale lock of a dead
 * process is no holder). Lets the CLI choose between opening the database and asking the running server.
 */
export function dataDirHolder(dataDir: string): number | undefined {
  let holder: string;
  try {
    holder = fs.readFileSync(path.join(dataDir, 'weft.lock'), 'utf8').trim();
  } catch {
    return undefined;
  }
  const pid = Number(holder.split(':')[0]);
  return pid && pid !== process.pid && holdsLock(holder, pid) ? pid : undefined;
}

/** `pid:start-time` of a process (the start time tells a reused pid apart; absent where /proc is missing). */
function lockOwner(pid: number): string {
  const started = processStart(pid);
  return started === undefined ? String(pid) : `${pid}:${started}`;
}

/** Fields of /proc/<pid>/stat after the command name: state, and the start time (field 22). */
function procStat(pid: number): { state: string; start: string } | undefined {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    const rest = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return { state: rest[0] ?? '', start: rest[19] ?? '' };
  } catch {
    return undefined;
  }
}

function processStart(pid: number): string | undefined {
  return procStat(pid)?.start;
}

/** Whether the process recorded in a lock still holds it: alive, not a zombie, and the same process. */
function holdsLock(holder: string, pid: number): boolean {
  if (!isAlive(pid)) return false;
  const stat = procStat(pid);
  if (!stat) return true; // no /proc: trust the signal check
  if (stat.state === 'Z' || stat.state === 'X') return false;
  const recordedStart = holder.split(':')[1];
  return recordedStart === undefined || recordedStart === stat.start;
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** How long start-up waits for a PostgreSQL that is away (restarting, its connections cut) before it gives up. */
export const STARTUP_DATABASE_WAIT_MS = 60_000;

/**
 * A start-up step against the database, tried again with backoff while the database is away, so a
 * process started while PostgreSQL restarts or has its connections terminated comes up instead of
 * exiting. Only for steps that may run twice (migrations, the bootstrap rows: each checks what exists).
 */
export function startupStep<T>(log: Logger | undefined, what: string, fn: () => Promise<T>): Promise<T> {
  return retryWhileUnavailable(fn, {
    deadlineMs: STARTUP_DATABASE_WAIT_MS,
    onRetry: (err, attempt) => {
      if (attempt === 1 || attempt % 10 === 0) log?.warn({ err, attempt }, `database unavailable while ${what}; trying again`);
    },
  });
}

/** An open database and how to give it back (close it, then unlock the data directory). */
export interface OpenedDatabase { db: Database; release: () => Promise<void> }

/**
 * Opens the database while `load` imports the modules that will use it: each takes most of a second, and one
 * after the other they were most of a start (`weft serve`) or of a CLI command. The embedded database's thread
 * starts once PGlite's WebAssembly is compiled, so the loading starts only then: begun before, it held this
 * thread and the database thread's start waited on it (docs/architecture.md, "Start-up"). A failure to open is
 * reported first; a failure to load releases the database.
 */
export async function openDatabaseWhileLoading<T>(config: Config, load: () => Promise<T>, log?: Logger): Promise<[OpenedDatabase, T]> {
  const opening = openDatabase(config, {}, log);
  opening.catch(() => undefined); // not unhandled while the compile is awaited: reported below
  // A failure to compile is the opening's to report (connectDatabase compiles again and fails with it).
  if (!config.databaseUrl) await compilePglite().catch(() => undefined);
  const [database, loaded] = await Promise.allSettled([opening, load()]);
  if (database.status === 'rejected') throw database.reason;
  if (loaded.status === 'rejected') {
    await database.value.release();
    throw loaded.reason;
  }
  return [database.value, loaded.value];
}

/** A tenant's scan held the embedded database past WEFT_QUERY_TIMEOUT_MS, which was opened again to end it. */
function reportRestart(log: Logger | undefined, e: RestartEvent): void {
  if (e.error) {
    log?.error({ err: e.error, timeoutMs: e.timeoutMs }, 'the embedded database could not be opened again after stopping a scan that ran past WEFT_QUERY_TIMEOUT_MS');
  } else {
    log?.warn({ timeoutMs: e.timeoutMs, failedCalls: e.failedCalls, reopenMs: e.reopenMs },
      'a scan held the embedded database past WEFT_QUERY_TIMEOUT_MS: its thread was stopped and the database opened again');
  }
}

/** Opens the database (locking the embedded data directory) and applies pending migrations. */
export async function openDatabase(
  config: Config, extra: Partial<ConnectOptions> = {}, log?: Logger,
): Promise<OpenedDatabase> {
  const unlock = extra.inMemory ? () => undefined : lockDataDir(config);
  let opened: Database | undefined;
  try {
    // initdb and the first migrations leave memory behind that this process would never get back: on a
    // first start they run in a child process that then exits (db/create-embedded.ts).
    if (!config.databaseUrl && !extra.inMemory && !extra.loadDataDir && !embeddedDatabaseExists(config.dataDir)) {
      await createEmbeddedDatabase(config.dataDir);
    }
    const db = await connectDatabase({
      databaseUrl: config.databaseUrl, dataDir: config.dataDir, fsync: config.embeddedFsync, onRestart: (e) => reportRestart(log, e), ...extra,
    });
    opened = db;
    if (!config.databaseUrl && !extra.inMemory && !config.embeddedFsync) {
      log?.warn('WEFT_EMBEDDED_FSYNC=off: commits are not synced to disk; a power cut or kernel crash can lose answered writes or corrupt the data directory');
    }
    await startupStep(log, 'applying migrations', () => migrate(db));
    return {
      db,
      release: async () => {
        await db.close();
        unlock();
      },
    };
  } catch (err) {
    await opened?.close().catch(() => undefined); // its pool or database thread would keep the process alive
    unlock();
    throw err;
  }
}

/**
 * The data directory holds the database (password hashes, key hashes, every tenant's data) and the secrets'
 * key file: only the server's own account may enter it, whatever the umask made of it or its files. An existing
 * directory is narrowed too (one made by an earlier version, or by hand); one owned by another account is left
 * as it is (the operator chose it).
 */
export function ownerOnly(dir: string): void {
  fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
  const st = fs.statSync(dir);
  if ((st.mode & 0o077) !== 0 && st.uid === process.getuid?.()) fs.chmodSync(dir, st.mode & 0o7700);
}
