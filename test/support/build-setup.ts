import { execFileSync } from 'node:child_process';
import path from 'node:path';

/**
 * Spawned servers and CLI commands run the build (`dist/`), as `npm start` does: a process from source
 * spends 1 to 2 s in tsx before it does anything, and the suites spawn hundreds. Rebuilt here only when
 * `src/` (or the dashboard) changed since the last build, with the same check as `npm start`.
 */
export default function buildIfStale(): void {
  const root = path.resolve(import.meta.dirname, '../..');
  execFileSync(process.execPath, ['scripts/build-if-stale.mjs'], { cwd: root, stdio: 'inherit' });
}
