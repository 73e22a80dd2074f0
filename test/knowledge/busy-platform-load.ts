// Child process of local-embedder.test.ts ("loads while V8's background thread is busy"): loads the local
// model while this process keeps compiling a large WebAssembly module, which occupies V8's background
// thread (one of them under `npm start`'s --v8-pool-size=1). Prints one JSON line with the outcome.
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { LocalEmbedder } from '../../src/knowledge/local-embedder.js';

const pgliteDist = path.dirname(createRequire(import.meta.url).resolve('@electric-sql/pglite'));
const bytes = fs.readFileSync(path.join(pgliteDist, 'pglite.wasm'));
// The WebAssembly global, typed here: the project's `lib` has no DOM, where TypeScript declares its values.
const wasm = (globalThis as unknown as { WebAssembly: { compile(bytes: Uint8Array): Promise<unknown> } }).WebAssembly;
let loaded = false;
const compiling = (async () => {
  let compiles = 0;
  while (!loaded) {
    await wasm.compile(bytes);
    compiles++;
  }
  return compiles;
})();

const embedder = new LocalEmbedder();
let outcome: { ok: true; dimension: number } | { ok: false; error: string };
try {
  const { vectors } = await embedder.embed(['refunds are paid within fourteen days']);
  outcome = { ok: true, dimension: vectors[0].length };
} catch (err) {
  outcome = { ok: false, error: err instanceof Error ? err.message : String(err) };
}
loaded = true;
const compiles = await compiling;
await embedder.close();
process.stdout.write(`${JSON.stringify({ ...outcome, compiles })}\n`);
