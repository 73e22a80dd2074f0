import type { FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import type { Config } from './config.js';
import type { Database } from './db/database.js';
import type { KeyAuthenticator } from './http/auth.js';

/** What every area's routes and services share: configuration, storage and the key authenticator. */
export interface AppContext {
  config: Config;
  db: Database;
  keys: KeyAuthenticator;
  log: Logger;
  /** Hooks run on shutdown, after the HTTP server stopped accepting (workers, queues). */
  onClose: (() => Promise<void>)[];
  /** What this process does: serve HTTP, run async jobs, or both (the default). */
  role: 'all' | 'api' | 'worker';
  /** The address the server listens on, once it does (links built outside a request). */
  publicUrl?: string;
  /** Area services register themselves here so other areas can call them. */
  services: Partial<AreaServices>;
}

/** Services areas expose to each other (filled in as areas register). */
// eslint-disable-next-line @typescript-eslint/no-empty-object-type
export interface AreaServices {}

/** An area's route plugin: registered with the shared context. */
export type AreaPlugin = (app: FastifyInstance, opts: { ctx: AppContext }) => Promise<void>;

/**
 * Lets an area's hooks reach every route, not only its own: Fastify encapsulates plugins unless
 * they carry this marker (what the fastify-plugin package sets).
 */
export function withGlobalHooks(plugin: AreaPlugin): AreaPlugin {
  return Object.assign(plugin, { [Symbol.for('skip-override')]: true });
}
