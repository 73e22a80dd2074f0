// Where a CLI command's operations run. With an embedded data directory held by a running server, in
// that server, through its admin socket; otherwise in this process, on a database it opens (embedded,
// taking the data directory's lock, or PostgreSQL). Either way the same operation (admin/operations.ts).
// Only what every command needs is imported here: the services, their operations and the admin client
// load when a command uses them, and in a direct session while the database opens (a command on the
// embedded database took 2.4 s, about half of it loading modules it then waited on the database with).
import type { Readable } from 'node:stream';
import { setFlagsFromString } from 'node:v8';
import type { ArgsOf, OperationName, ResultOf } from '../admin/operations.js';
import { readServerInfo, type ServerInfo } from '../admin/server-info.js';
import { loadConfig, type Config } from '../config.js';
import type { AppContext } from '../context.js';
import { createLogger, dataDirHolder, DataDirInUseError, openDatabaseWhileLoading } from '../runtime.js';
import { fail } from './output.js';

export interface Session {
  /** `server`: through the running server's admin socket; `direct`: on a database this process opened. */
  via: 'server' | 'direct';
  call<N extends OperationName>(name: N, args: ArgsOf<N>): Promise<ResultOf<N>>;
  /** Writes a gzip-compressed dump of the embedded data directory to `file`. */
  backup(file: string): Promise<{ file: string; bytes: number }>;
  close(): Promise<void>;
}

/** How long a command waits for a data directory held by another process (a server starting, a command). */
const WAIT_FOR_HOLDER_MS = 30_000;

/** The server holding this embedded data directory, when one runs and has opened its admin socket. */
export function runningServer(dataDir: string): ServerInfo | undefined {
  const holder = dataDirHolder(dataDir);
  const info = holder === undefined ? undefined : readServerInfo(dataDir);
  return info && info.pid === holder ? info : undefined;
}

/**
 * Opens a session for a command whose operations are `names` (those that run workflows need the
 * whole run machinery when they run in this process).
 */
export async function openSession(config: Config, names: readonly OperationName[]): Promise<Session> {
  if (config.databaseUrl) return openDirect(config, names);
  const deadline = Date.now() + WAIT_FOR_HOLDER_MS;
  for (;;) {
    const server = runningServer(config.dataDir);
    if (server) return serverSession(server);
    try {
      return await openDirect(config, names);
    } catch (err) {
      // Held by a server still opening its database, or by another command: wait for it a while.
      if (!(err instanceof DataDirInUseError) || Date.now() > deadline) throw err;
    }
    await new Promise((r) => setTimeout(r, 250));
  }
}

function serverSession(server: ServerInfo): Session {
  const client = import('../admin/client.js');
  return {
    via: 'server',
    call: async (name, args) => (await (await client).callAdmin(server, name, args)) as ResultOf<typeof name>,
    backup: async (file) => {
      const [{ fetchBackup }, { writeBackup }] = await Promise.all([client, import('../admin/backup.js')]);
      return writeBackup(await fetchBackup(server), file);
    },
    close: async () => undefined,
  };
}

/**
 * Operations whose work grows with the database (migrations, sums over every usage event, every secret
 * re-encrypted) or runs workflows: a command of only other operations is short. Named here rather than on
 * the operations themselves, whose module loads only while the database opens.
 */
const LONG_OPERATIONS: ReadonlySet<OperationName> = new Set<OperationName>(['migrate', 'usage.reconcile', 'secrets.rotate-key', 'workflows.run']);

/**
 * A short command runs PGlite's WebAssembly as V8's baseline compiler (Liftoff) makes it. Its optimizing
 * compiles cost such a command about a third of its CPU (1.1 of 3.5 s), for code it ended before using;
 * on a long one, optimized code does the database's work 1.3 to 2 times faster (bench/RESULTS.md, "a
 * CLI command's WebAssembly"). The flag is process-wide and read when the module compiles, which a
 * direct session does next.
 */
function compileForShortCommand(config: Config, names: readonly OperationName[]): void {
  if (!config.databaseUrl && names.length > 0 && names.every((n) => !LONG_OPERATIONS.has(n))) setFlagsFromString('--liftoff-only');
}

/** The modules a direct session runs its operations with. */
function directModules() {
  return Promise.all([import('../compose.js'), import('../admin/operations.js'), import('../admin/backup.js')]);
}

async function openDirect(config: Config, names: readonly OperationName[]): Promise<Session> {
  compileForShortCommand(config, names);
  // The database (a thread of its own when embedded) opens while the services' modules load.
  const [opened, modules] = await openDatabaseWhileLoading(config, directModules);
  const [{ composeCore, composeServices }, { CommandError, needsRuns, perform }, { blobStream, dumpDatabase, PG_DUMP_ADVICE, writeBackup }] = modules;
  const ctx: AppContext = { config, db: opened.db, log: createLogger(config), role: 'api' };
  let services;
  try {
    services = names.some(needsRuns) ? composeServices(ctx) : composeCore(ctx);
  } catch (err) {
    await opened.release();
    throw err;
  }
  const background: Promise<unknown>[] = [];
  const abort = new AbortController();
  let closing: Promise<void> | undefined;
  return {
    via: 'direct',
    call: async (name, args) =>
      (await perform(name, args, {
        services, ctx, inServer: false, signal: abort.signal,
        background: (work) => background.push(work.catch((err: unknown) => ctx.log.error({ err, command: name }, 'background work failed'))),
      })) as ResultOf<typeof name>,
    backup: async (file) => {
      if (config.databaseUrl) throw new CommandError(PG_DUMP_ADVICE);
      const tar: Readable = blobStream(await dumpDatabase(ctx.db));
      return writeBackup(tar, file);
    },
    close: () => {
      closing ??= (async () => {
        abort.abort(new Error('The command ended'));
        await Promise.allSettled(background);
        // Nothing was started (a CLI runs no workers); what the services hold open is stopped.
        await services.lifecycles.stop();
        await opened.release();
      })();
      return closing;
    },
  };
}

/**
 * Runs a command's body in a session and closes it; any failure is reported (as `{"error"}` with
 * --json) with exit code 1.
 */
export async function withSession<T>(json: boolean, names: readonly OperationName[], fn: (session: Session) => Promise<T>): Promise<T> {
  let config: Config;
  try {
    config = loadConfig();
  } catch (err) {
    return fail((err as Error).message, json);
  }
  let session: Session | undefined;
  try {
    session = await openSession(config, names);
    const value = await fn(session);
    await session.close();
    return value;
  } catch (err) {
    await session?.close().catch(() => undefined);
    return fail((err as Error).message, json);
  }
}
