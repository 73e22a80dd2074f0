// The Docker image runs Node with the flags of `npm start` (README, "Sizing"): the memory figures in
// bench/RESULTS.md were measured with those flags, and `bench/` reads them from package.json. The two lists
// drifted once; this keeps them equal.
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { nodeFlags, npmStartFlags } from '../support/start-flags.js';

const root = path.resolve(import.meta.dirname, '../..');

describe('Node flags', () => {
  it('are the same in npm start and in the Docker image', () => {
    const start = npmStartFlags();
    const dockerfile = fs.readFileSync(path.join(root, 'Dockerfile'), 'utf8');
    const entry = /^ENTRYPOINT\s+(\[.*\])\s*$/m.exec(dockerfile);
    expect(entry, 'the Dockerfile has an ENTRYPOINT in exec form').not.toBeNull();
    const image = nodeFlags(JSON.parse(entry![1]) as string[], 'the Dockerfile ENTRYPOINT');
    expect(image).toEqual(start);
    // The flags that bound memory (README, "Sizing"), so that dropping one from both is noticed as well.
    expect(start).toEqual(expect.arrayContaining(['--max-semi-space-size=4', '--heap-growing-percent=20', '--v8-pool-size=1']));
  });
});
