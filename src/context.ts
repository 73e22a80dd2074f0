import type { Logger } from 'pino';
import type { Config } from './config.js';
import type { Database } from './db/database.js';

/** What the composition root and the app share: configuration, storage, the logger and the process role. */
export interface AppContext {
  config: Config;
  db: Database;
  log: Logger;
  /** What this process does: serve HTTP, run async jobs, or both (the default). */
  role: 'all' | 'api' | 'worker';
}
