// The Docker image runs Node with the flags of `npm start` (README, "Sizing"): the memory figures in
// bench/RESULTS.md were measured with those flags, and `bench/` reads them from package.json. The two lists
// drifted once; this keeps them equal.
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

const root = path.resolve(import.meta.dirname, '../..');

/** The words between `node` and `dist/main.js`. */
function nodeFlags(words: string[], where: string): string[] {
  const script = words.indexOf('dist/main.js');
  if (words[0] !== 'node' || script < 0) throw new Error(`${where} does not run node ... dist/main.js: ${words.join(' ')}`);
  return words.slice(1, script);
}

describe('Node flags', () => {
  it('are the same in npm start and in the Docker image', () => {
    const pkg = JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8')) as { scripts: { start: string } };
    const start = nodeFlags(pkg.scripts.start.trim().split(/\s+/), 'npm start');
    const dockerfile = fs.readFileSync(path.join(root, 'Dockerfile'), 'utf8');
    const entry = /^ENTRYPOINT\s+(\[.*\])\s*$/m.exec(dockerfile);
    expect(entry, 'the Dockerfile has an ENTRYPOINT in exec form').not.toBeNull();
    const image = nodeFlags(JSON.parse(entry![1]) as string[], 'the Dockerfile ENTRYPOINT');
    expect(image).toEqual(start);
    // The flags that bound memory (README, "Sizing"), so that dropping one from both is noticed as well.
    expect(start).toEqual(expect.arrayContaining(['--max-semi-space-size=4', '--heap-growing-percent=20', '--v8-pool-size=1']));
  });
});
