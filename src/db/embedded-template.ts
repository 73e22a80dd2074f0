/**
 * A created and migrated embedded data directory, made once by the build (scripts/build-db-template.mjs) and
 * copied into a new data directory on its first start. Creating one (initdb, then every migration) takes about
 * 5 s of PGlite; copying takes a fraction of a second (docs/architecture.md, "Embedded database"). The template
 * is named by a fingerprint of the migrations, so a build whose migrations changed never copies a stale one.
 */
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { listMigrations } from './migrate.js';

const execFileAsync = promisify(execFile);
const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

/** Written last into a finished template: a build stopped halfway leaves a folder without it, never used. */
const COMPLETE = 'complete';

/** Names the schema the migrations build: their names and their SQL. */
export function schemaFingerprint(): string {
  const h = createHash('sha256');
  for (const m of listMigrations()) h.update(m.name).update(m.sql);
  return h.digest('hex').slice(0, 12);
}

/** The build's templates, one folder per fingerprint. */
export function templatesDir(): string {
  return path.join(repoRoot, 'dist', 'db-template');
}

/** The template for the current migrations, if the build made it. */
export function currentTemplate(): string | undefined {
  const dir = path.join(templatesDir(), schemaFingerprint());
  return fs.existsSync(path.join(dir, COMPLETE)) ? dir : undefined;
}

/** Marks a template folder (holding `pgdata`) as finished. */
export function markComplete(dir: string): void {
  fs.writeFileSync(path.join(dir, COMPLETE), new Date().toISOString());
}

/**
 * Copies `template`'s data directory into `dataDir`/pgdata. The copy is synced to disk and only then renamed
 * into place, so a crash or a power cut leaves either no database (created again at the next start) or the
 * whole of it, never part of one. Asynchronous: the server's modules load meanwhile. The caller holds the data
 * directory's lock, so a partial copy found there is an earlier process's, left by a crash: it goes.
 */
export async function copyTemplate(template: string, dataDir: string): Promise<void> {
  const target = path.join(dataDir, 'pgdata');
  const partial = path.join(dataDir, `pgdata.creating-${process.pid}`);
  await fsp.mkdir(dataDir, { recursive: true });
  for (const entry of await fsp.readdir(dataDir)) {
    if (/^pgdata\.creating-\d+$/.test(entry)) await fsp.rm(path.join(dataDir, entry), { recursive: true, force: true });
  }
  try {
    await copyTree(path.join(template, 'pgdata'), partial);
    await syncCopy(partial);
    await fsp.rename(partial, target);
    await syncPath(dataDir);
  } catch (err) {
    await fsp.rm(partial, { recursive: true, force: true });
    throw err;
  }
}

async function syncPath(p: string): Promise<void> {
  const handle = await fsp.open(p, 'r');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}

/**
 * The template's 41 MB in 1,181 files. `cp -R`, a process of its own, took 0.4 to 0.8 s here and leaves this
 * thread free to load the server's modules meanwhile; Node's `fs.cp` took 1.2 s, most of it on this thread, so
 * it is only the way where the command is missing.
 */
async function copyTree(from: string, to: string): Promise<void> {
  try {
    await execFileAsync('cp', ['-R', from, to], { timeout: 300_000 });
    return;
  } catch {
    await fsp.rm(to, { recursive: true, force: true }); // whatever a failed copy left
  }
  await fsp.cp(from, to, { recursive: true });
}

/**
 * The copy on disk. One syncfs(2), through coreutils' `sync -f` (Node has no binding for it), took about 50 ms
 * here; an fsync of each of the template's 1,181 files and folders took about 0.8 s, so that is only the way
 * where the command is missing.
 */
async function syncCopy(dir: string): Promise<void> {
  try {
    await execFileAsync('sync', ['-f', dir], { timeout: 60_000 });
    return;
  } catch {
    // no `sync -f` here: file by file
  }
  await syncTree(dir);
}

/** fsync of every file under `dir`, then of the folder itself, so that its entries are durable too. */
async function syncTree(dir: string): Promise<void> {
  for (const entry of await fsp.readdir(dir, { withFileTypes: true })) {
    const p = path.join(dir, entry.name);
    if (entry.isDirectory()) await syncTree(p);
    else if (entry.isFile()) await syncPath(p);
  }
  await syncPath(dir);
}
