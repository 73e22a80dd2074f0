// The Docker image runs Node with the flags and the environment of `npm start` (README, "Sizing"): the memory
// figures in bench/RESULTS.md were measured with them, and `bench/` reads them from package.json. The two lists
// drifted once; this keeps them equal.
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { leadingEnv, nodeFlags, npmStartEnv, npmStartFlags } from '../support/start-flags.js';

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

  it('set the same malloc tuning in npm start and in the Docker image', () => {
    const dockerfile = fs.readFileSync(path.join(root, 'Dockerfile'), 'utf8');
    const imageEnv = Object.fromEntries([...dockerfile.matchAll(/^ENV\s+([A-Za-z_][A-Za-z0-9_]*)=(\S+)\s*$/gm)].map((m) => [m[1], m[2]]));
    const start = npmStartEnv();
    expect(start).toEqual({ MALLOC_TRIM_THRESHOLD_: '65536' });
    for (const [name, value] of Object.entries(start)) expect(imageEnv[name], `the Dockerfile sets ${name}`).toBe(value);
  });

  it('read a command line as a shell does: assignments first, then node and its flags', () => {
    const words = 'A_1=x B= node --flag dist/main.js serve'.split(' ');
    expect(leadingEnv(words)).toEqual({ A_1: 'x', B: '' });
    expect(nodeFlags(words, 'test')).toEqual(['--flag']);
    expect(() => nodeFlags(['A=1', 'npx', 'dist/main.js'], 'test')).toThrow(/does not run node/);
  });
});
