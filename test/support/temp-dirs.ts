import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

/**
 * The run's own folder under the system's temp directory. The run's global teardown removes it, with whatever
 * its suites left there (a test server's embedded database is about 40 MB).
 */
export const runTempRoot = (run = process.env.WEFT_TEST_RUN ?? 'adhoc'): string => path.join(os.tmpdir(), `weft-test-run-${run}`);

/** Directories made by the test file running in this fork, removed when it ends (test/support/suite-cleanup.ts). */
const suiteDirs: string[] = [];

/** A new directory for one suite (a data directory, files it writes), removed when the suite ends. */
export function runTempDir(prefix: string): string {
  const root = runTempRoot();
  fs.mkdirSync(root, { recursive: true });
  const dir = fs.mkdtempSync(path.join(root, prefix));
  suiteDirs.push(dir);
  return dir;
}

/** Removes the directories the ending suite made; one that cannot be removed now is left to the run's teardown. */
export function removeSuiteTempDirs(): void {
  for (const dir of suiteDirs.splice(0)) {
    try {
      fs.rmSync(dir, { recursive: true, force: true, maxRetries: 2 });
    } catch {
      // the run's teardown removes it
    }
  }
}
