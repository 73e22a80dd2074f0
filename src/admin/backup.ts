// A consistent copy of the embedded database: PGlite's own dump of its data directory (a tar archive of
// the files of `<WEFT_DATA_DIR>/pgdata`), taken while no statement runs, written gzip-compressed.
// Restoring it is opening a fresh data directory from the archive (`loadDataDir`), which is what
// `weft restore` does; `tar -xzf <file> -C <WEFT_DATA_DIR>/pgdata` works as well.
import fs from 'node:fs';
import path from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { createGzip, gunzipSync } from 'node:zlib';
import type { Database } from '../db/database.js';
import { CommandError } from './operations.js';

export const PG_DUMP_ADVICE =
  'weft backup copies the embedded database (WEFT_DATA_DIR). With DATABASE_URL set, back up PostgreSQL with its own tools, ' +
  'e.g. pg_dump --format=custom --file=weft.dump "$DATABASE_URL" (restore with pg_restore), or your provider\'s snapshots.';

interface Dumpable {
  dumpDataDir(): Promise<Blob>;
}

/**
 * The tar archive of the data directory. It is taken inside a transaction of the one PGlite connection,
 * so no other statement or transaction is in flight: the files are those of a quiet database, after a
 * checkpoint has written every committed change into them.
 */
export async function dumpDatabase(db: Database): Promise<Blob> {
  if (db.mode !== 'pglite') throw new CommandError(PG_DUMP_ADVICE);
  const dumpable = db as Database & Partial<Dumpable>;
  const dump = dumpable.dumpDataDir;
  if (typeof dump !== 'function') throw new CommandError('This database cannot be dumped');
  return db.tx(async (q) => {
    await q.exec('CHECKPOINT');
    return dump();
  });
}

/** Writes the archive gzip-compressed to `file`, whole or not at all (a temporary name, then a rename). */
export async function writeBackup(tar: Readable, file: string): Promise<{ file: string; bytes: number }> {
  const target = path.resolve(file);
  const tmp = `${target}.${process.pid}.partial`;
  try {
    await pipeline(tar, createGzip(), fs.createWriteStream(tmp, { mode: 0o600 }));
    fs.renameSync(tmp, target);
  } catch (err) {
    fs.rmSync(tmp, { force: true });
    throw err;
  }
  return { file: target, bytes: fs.statSync(target).size };
}

export const blobStream = (blob: Blob): Readable => Readable.fromWeb(blob.stream() as Parameters<typeof Readable.fromWeb>[0]);

/** Reads a backup (gzip-compressed or a plain tar) into the tar's bytes, which `loadDataDir` takes. */
export async function readBackup(file: string): Promise<Uint8Array> {
  const raw = await fs.promises.readFile(file);
  return raw[0] === 0x1f && raw[1] === 0x8b ? gunzipSync(raw) : raw;
}
