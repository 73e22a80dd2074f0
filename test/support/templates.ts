import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { listMigrations } from '../../src/db/migrate.js';

export const cacheDir = path.resolve('.test-cache');

/** Template names change whenever a migration does, so a stale template is never loaded. */
export function schemaHash(): string {
  const h = createHash('sha256');
  for (const m of listMigrations()) h.update(m.name).update(m.sql);
  return h.digest('hex').slice(0, 12);
}

export const pgliteTemplatePath = () => path.join(cacheDir, `pglite-${schemaHash()}.tar`);
/** The template unpacked: copying it (about 0.1 s) is much cheaper than loading the tarball into a new directory (about 1 s). */
export const pgliteTemplateDir = () => path.join(cacheDir, `pglite-${schemaHash()}`);
export const postgresTemplateName = () => `weft_template_${schemaHash()}`;

export function postgresUrlFor(base: string, database: string): string {
  const u = new URL(base);
  u.pathname = `/${database}`;
  return u.toString();
}

export function ensureCacheDir(): void {
  fs.mkdirSync(cacheDir, { recursive: true });
}
