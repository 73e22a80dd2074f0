import fs from 'node:fs';
import path from 'node:path';
import type { Command } from 'commander';
import { PG_DUMP_ADVICE, readBackup } from '../admin/backup.js';
import { loadConfig, type Config } from '../config.js';
import { openDatabase } from '../runtime.js';
import { emit, fail } from './output.js';
import { withSession } from './session.js';

function holdsDatabase(dataDir: string): boolean {
  const pgdata = path.join(dataDir, 'pgdata');
  return fs.existsSync(pgdata) && fs.readdirSync(pgdata).length > 0;
}

/** `weft backup <file>` and `weft restore <file>` for the embedded data directory. */
export function registerBackupCommands(program: Command): void {
  program
    .command('backup')
    .description('Write a consistent dump of the embedded database (gzip-compressed tar), also while the server runs')
    .argument('<file>', 'where to write it, e.g. weft-backup.tar.gz')
    .option('--json', 'machine-readable output')
    .action(async (file: string, o: { json?: boolean }) => {
      const json = Boolean(o.json);
      let config: Config;
      try {
        config = loadConfig();
      } catch (err) {
        return fail((err as Error).message, json);
      }
      if (config.databaseUrl) fail(PG_DUMP_ADVICE, json);
      // Opening a data directory that holds no database would create an empty one, only to dump it.
      if (!holdsDatabase(config.dataDir)) fail(`No database to back up in ${config.dataDir} (WEFT_DATA_DIR)`, json);
      const out = await withSession(json, [], async (s) => ({ ...(await s.backup(file)), via: s.via }));
      emit(json, out, () => `Wrote ${out.file} (${out.bytes} bytes${out.via === 'server' ? ', dumped by the running server' : ''}).`);
    });

  program
    .command('restore')
    .description('Create the embedded database of WEFT_DATA_DIR from a backup (the directory must hold no database yet)')
    .argument('<file>', 'a file written by weft backup')
    .option('--json', 'machine-readable output')
    .action(async (file: string, o: { json?: boolean }) => {
      const json = Boolean(o.json);
      try {
        const config = loadConfig();
        if (config.databaseUrl) return fail('weft restore fills an embedded data directory; with DATABASE_URL, restore PostgreSQL with pg_restore', json);
        if (holdsDatabase(config.dataDir)) {
          return fail(`${config.dataDir} already holds a database: move it aside, or point WEFT_DATA_DIR at an empty directory`, json);
        }
        const dump = await readBackup(file);
        // Opening takes the data directory's lock, loads the archive and applies newer migrations.
        const { release } = await openDatabase(config, { loadDataDir: dump });
        await release();
        emit(json, { dataDir: config.dataDir, restored: path.resolve(file) }, () => `Restored ${file} into ${config.dataDir}. Start the server with the same WEFT_DATA_DIR.`);
      } catch (err) {
        fail((err as Error).message, json);
      }
    });
}
