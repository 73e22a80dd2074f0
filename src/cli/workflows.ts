import type { Command } from 'commander';
import type { Config } from '../config.js';
import type { Database } from '../db/database.js';

export type WithDatabase = <T>(json: boolean, fn: (db: Database, config: Config) => Promise<T>) => Promise<T>;

/** `weft workflows ...`: filled in by the workflows area. */
export function registerWorkflowCommands(program: Command, withDatabase: WithDatabase): void {
  void program;
  void withDatabase;
}
