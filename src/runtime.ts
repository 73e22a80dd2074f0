import fs from 'node:fs';
import path from 'node:path';
import pino, { type Logger } from 'pino';
import type { Config } from './config.js';
import { connectDatabase, type ConnectOptions } from './db/connect.js';
import type { Database } from './db/database.js';
import { migrate } from './db/migrate.js';

/** Logs go to stderr so that `--json` output on stdout stays a clean document. */
export function createLogger(config: Config): Logger {
  return pino({ level: config.logLevel, base: { service: 'weft' } }, pino.destination(2));
}

/**
 * In embedded mode only one process may open the data directory. The lock file holds the pid;
 * a lock left by a dead process is taken over.
 */
export function lockDataDir(config: Config): () => void {
  if (config.databaseUrl) return () => undefined;
  fs.mkdirSync(config.dataDir, { recursive: true });
  const file = path.join(config.dataDir, 'weft.lock');
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      fs.writeFileSync(file, String(process.pid), { flag: 'wx' });
      return () => {
        try {
          if (fs.readFileSync(file, 'utf8') === String(process.pid)) fs.unlinkSync(file);
        } catch {
          // already gone
        }
      };
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      const pid = Number(fs.readFileSync(file, 'utf8'));
      if (pid && pid !== process.pid && isAlive(pid)) {
        throw new Error(
          `The data directory ${config.dataDir} is in use by process ${pid} (a running Weft server?). ` +
            'Stop it first, or set DATABASE_URL to use PostgreSQL, where commands work while the server runs.',
        );
      }
      fs.unlinkSync(file);
    }
  }
  throw new Error(`Could not lock ${config.dataDir}`);
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Opens the database (locking the embedded data directory) and applies pending migrations. */
export async function openDatabase(config: Config, extra: Partial<ConnectOptions> = {}): Promise<{ db: Database; release: () => Promise<void> }> {
  const unlock = extra.inMemory ? () => undefined : lockDataDir(config);
  try {
    const db = await connectDatabase({ databaseUrl: config.databaseUrl, dataDir: config.dataDir, ...extra });
    await migrate(db);
    return {
      db,
      release: async () => {
        await db.close();
        unlock();
      },
    };
  } catch (err) {
    unlock();
    throw err;
  }
}
