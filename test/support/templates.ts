import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { schemaFingerprint } from '../../src/db/embedded-template.js';

export const cacheDir = path.resolve('.test-cache');

/** Template names change whenever a migration does, so a stale template is never loaded (the build's own template is named the same way). */
export const schemaHash = schemaFingerprint;

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

/**
 * A new PostgreSQL database's name for a suite (`kind` t: a test server's, q: the queue suite's). It carries the
 * run's id (WEFT_TEST_RUN, set by the global setup and inherited by the forks), so that the run's teardown drops
 * what the run created and nothing of a run beside it on the same server.
 */
export function testDatabaseName(kind: 't' | 'q'): string {
  return `weft_${kind}_${process.env.WEFT_TEST_RUN ?? 'adhoc'}_${randomBytes(6).toString('hex')}`;
}

/** Matches the databases `testDatabaseName` gave out in run `run`. */
export const runDatabasesPattern = (run: string) => `^weft_[tq]_${run}_[0-9a-f]+$`;
