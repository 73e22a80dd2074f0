// How `npm start` runs the server, read from package.json: the environment it sets (glibc's malloc tuning) and
// the Node flags. The bench measures under both and tests that depend on them (the memory flags, one V8
// background thread) run under them.
import fs from 'node:fs';
import path from 'node:path';

const root = path.resolve(import.meta.dirname, '../..');

/** `NAME=value` words before the command, as a shell reads them. */
const ASSIGNMENT = /^([A-Za-z_][A-Za-z0-9_]*)=(\S*)$/;

/** The leading `NAME=value` words of a command line, as an environment. */
export function leadingEnv(words: string[]): Record<string, string> {
  const env: Record<string, string> = {};
  for (const word of words) {
    const m = ASSIGNMENT.exec(word);
    if (!m) break;
    env[m[1]] = m[2];
  }
  return env;
}

/** The words between `node` and `dist/main.js` of a command line (after its leading `NAME=value` words); `where` names it in the error. */
export function nodeFlags(words: string[], where: string): string[] {
  const command = words.slice(Object.keys(leadingEnv(words)).length);
  const script = command.indexOf('dist/main.js');
  if (command[0] !== 'node' || script < 0) throw new Error(`${where} does not run node ... dist/main.js: ${words.join(' ')}`);
  return command.slice(1, script);
}

function startWords(): string[] {
  const pkg = JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8')) as { scripts: { start: string } };
  return pkg.scripts.start.trim().split(/\s+/);
}

/** The Node flags of `npm start` (package.json's start script). */
export function npmStartFlags(): string[] {
  return nodeFlags(startWords(), 'npm start');
}

/** The environment `npm start` sets for the server (the script's leading `NAME=value` words). */
export function npmStartEnv(): Record<string, string> {
  return leadingEnv(startWords());
}
