// The Node flags `npm start` runs the server with, read from package.json: the bench measures under them and
// tests that depend on them (the memory flags, one V8 background thread) run under them.
import fs from 'node:fs';
import path from 'node:path';

const root = path.resolve(import.meta.dirname, '../..');

/** The words between `node` and `dist/main.js` of a command line; `where` names it in the error. */
export function nodeFlags(words: string[], where: string): string[] {
  const script = words.indexOf('dist/main.js');
  if (words[0] !== 'node' || script < 0) throw new Error(`${where} does not run node ... dist/main.js: ${words.join(' ')}`);
  return words.slice(1, script);
}

/** The Node flags of `npm start` (package.json's start script). */
export function npmStartFlags(): string[] {
  const pkg = JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8')) as { scripts: { start: string } };
  return nodeFlags(pkg.scripts.start.trim().split(/\s+/), 'npm start');
}
