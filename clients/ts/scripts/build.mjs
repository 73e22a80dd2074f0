// Builds the package to dist/ (or to the directory given as the first argument): tsc with this
// package's tsconfig, then the generated schema.d.ts beside the output (tsc does not copy .d.ts files).
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';

const root = path.dirname(path.dirname(fileURLToPath(import.meta.url)));
const outDir = path.resolve(process.argv[2] ?? path.join(root, 'dist'));
const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
const run = spawnSync(process.execPath, [tsc, '-p', path.join(root, 'tsconfig.json'), '--outDir', outDir], { stdio: 'inherit' });
if (run.status !== 0) process.exit(run.status ?? 1);
fs.copyFileSync(path.join(root, 'src', 'schema.d.ts'), path.join(outDir, 'schema.d.ts'));
