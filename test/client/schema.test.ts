// The client package's generated types are current (they match a freshly generated schema of this
// source tree's OpenAPI document), and the package builds as published: dist/ holds every file its
// package.json exports, and the built module loads.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { generateSchema, schemaPath } from '../../scripts/generate-client.js';
import { dbMode } from '../support/harness.js';

const pkgDir = path.resolve('clients/ts');
// Inside the repository's node_modules, so that the built module resolves openapi-fetch as in a checkout.
const outDir = path.resolve('node_modules/.cache', `weft-client-build-${process.pid}`);
afterAll(() => fs.rmSync(outDir, { recursive: true, force: true }));

// Nothing here touches the suite's database (the generator uses its own in-memory PGlite): run it once.
describe.skipIf(dbMode() === 'postgres')('the TypeScript client package', () => {
  it('has generated types matching the current OpenAPI document', { timeout: 120_000 }, async () => {
    const fresh = await generateSchema();
    const committed = fs.readFileSync(schemaPath, 'utf8');
    // Not toBe on the text: a 300 kB diff is no help. Name the routes that differ; the fix is one command.
    const routes = (text: string) => new Set([...text.matchAll(/^ {4}"(\/[^"]*)": \{$/gm)].map((m) => m[1]));
    const [was, now] = [routes(committed), routes(fresh)];
    const changed = [...[...now].filter((r) => !was.has(r)).map((r) => `+${r}`), ...[...was].filter((r) => !now.has(r)).map((r) => `-${r}`)];
    expect(committed === fresh, `clients/ts/src/schema.d.ts is stale (routes ${changed.join(' ') || 'unchanged; schemas differ'}): run \`npm run client:generate\` and commit it`).toBe(true);
  });

  it('builds to dist with every exported file, and the build loads', { timeout: 120_000 }, async () => {
    const build = spawnSync(process.execPath, [path.join(pkgDir, 'scripts/build.mjs'), outDir], { encoding: 'utf8' });
    expect(build.status, build.stdout + build.stderr).toBe(0);
    const pkg = JSON.parse(fs.readFileSync(path.join(pkgDir, 'package.json'), 'utf8'));
    expect(pkg.type).toBe('module');
    expect(pkg.dependencies['openapi-fetch']).toBeDefined();
    const targets = Object.values(pkg.exports as Record<string, string | Record<string, string>>)
      .flatMap((v) => (typeof v === 'string' ? [] : Object.values(v)))
      .filter((f) => f.startsWith('./dist/'));
    expect(targets.length).toBeGreaterThanOrEqual(3);
    for (const file of targets) expect(fs.existsSync(path.join(outDir, file.slice('./dist/'.length))), file).toBe(true);
    const mod = await import(pathToFileURL(path.join(outDir, 'index.js')).href);
    expect(Object.keys(mod).sort()).toEqual(['ChatStream', 'WeftApiError', 'WeftClient', 'WeftRunError', 'WeftTimeoutError', 'createWeftClient', 'pausesOf', 'pollUntil', 'readSse', 'unwrap']);
    const client = mod.createWeftClient({ baseUrl: 'http://127.0.0.1:1', apiKey: 'k' });
    expect(typeof client.api.GET).toBe('function');
  });
});
