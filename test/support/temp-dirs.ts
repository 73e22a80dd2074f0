import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

/**
 * The run's own folder under the system's temp directory. The run's global teardown removes it, with every
 * data directory and file its suites left there (a test server's embedded database is tens of MB).
 */
export const runTempRoot = (run = process.env.WEFT_TEST_RUN ?? 'adhoc'): string => path.join(os.tmpdir(), `weft-test-run-${run}`);

/** A new directory for one suite (a data directory, files it writes), removed with the run's folder. */
export function runTempDir(prefix: string): string {
  const root = runTempRoot();
  fs.mkdirSync(root, { recursive: true });
  return fs.mkdtempSync(path.join(root, prefix));
}
