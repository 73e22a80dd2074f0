// Writes test/support/test-durations.json from vitest's record of this checkout's last run (its cache in
// node_modules/.vite/vitest): each file's duration in seconds on the embedded database, the slowest of the
// database modes where both ran. The suites' sequencer (test/support/sequencer.ts) orders a fresh
// checkout's run by it. Run after a whole `npm test`.
import fs from 'node:fs';
import path from 'node:path';

const root = path.resolve(import.meta.dirname, '..');
const cacheRoot = path.join(root, 'node_modules/.vite/vitest');
const found = fs.existsSync(cacheRoot)
  ? fs.readdirSync(cacheRoot).map((d) => path.join(cacheRoot, d, 'results.json')).filter((f) => fs.existsSync(f))
  : [];
if (found.length === 0) {
  console.error('no vitest results in node_modules/.vite/vitest: run npm test first');
  process.exit(1);
}
const newest = found.sort((a, b) => fs.statSync(b).mtimeMs - fs.statSync(a).mtimeMs)[0];
const { results } = JSON.parse(fs.readFileSync(newest, 'utf8'));
const seconds = {};
for (const [key, { duration }] of results) {
  const file = key.slice(key.indexOf(':') + 1);
  if (!fs.existsSync(path.join(root, file)) || typeof duration !== 'number') continue;
  seconds[file] = Math.max(seconds[file] ?? 0, Math.round(duration / 100) / 10);
}
const sorted = Object.fromEntries(Object.entries(seconds).sort(([a], [b]) => a.localeCompare(b)));
fs.writeFileSync(path.join(root, 'test/support/test-durations.json'), JSON.stringify(sorted, null, 1) + '\n');
console.log(`test/support/test-durations.json: ${Object.keys(sorted).length} files`);
