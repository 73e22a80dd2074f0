// `npm run bench -- start-up [--starts N] [--against <another checkout, built>]`: how long `weft serve` takes from
// its spawn to `/readyz`, started as `npm start` starts it: on an embedded data directory it has served before (a
// restart), and on an empty one (a first start, which creates the database). With `--against`, the other
// checkout's build is started the same way on data directories of its own, one start of each in turn, so that
// both see the same moments of a shared machine.
// docs/architecture.md, "Start-up".
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import { parseArgs } from 'node:util';
import { npmStartEnv, npmStartFlags } from '../test/support/start-flags.js';
import { cleanupAll, freePort, installExitHandlers, onCleanup, root, start, stop, waitFor200 } from './compare-procs.js';
import { machine, median } from './support.js';

export const standalone = true;

interface Build { name: string; checkout: string; dataDir: string; ms: number[]; firstMs: number[] }

/** A data directory set up by the build's own `weft setup`, so that each start after it is a restart. */
function prepare(name: string, checkout: string): Build {
  const main = path.join(checkout, 'dist/main.js');
  if (!fs.existsSync(main)) throw new Error(`${main} is missing: build that checkout first (npm run build)`);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'weft-start-up-'));
  onCleanup(() => fs.rmSync(dir, { recursive: true, force: true }));
  const dataDir = path.join(dir, 'data');
  execFileSync(process.execPath, [...npmStartFlags(), main, 'setup', '--json'], { cwd: checkout, env: { ...process.env, ...npmStartEnv(), WEFT_DATA_DIR: dataDir }, stdio: 'ignore' });
  return { name, checkout, dataDir, ms: [], firstMs: [] };
}

/** A first start: an empty data directory, removed afterwards. */
async function firstStart(build: Build): Promise<number> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'weft-first-start-'));
  try {
    return await startOnce(build, path.join(dir, 'data'));
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

async function startOnce(build: Build, dataDir = build.dataDir): Promise<number> {
  const port = await freePort();
  const t0 = performance.now();
  const proc = start(`weft serve (${build.name})`, process.execPath, [...npmStartFlags(), path.join(build.checkout, 'dist/main.js'), 'serve'], {
    cwd: build.checkout,
    env: { ...process.env, ...npmStartEnv(), WEFT_DATA_DIR: dataDir, PORT: String(port), HOST: '127.0.0.1', LOG_LEVEL: 'warn' },
  });
  try {
    return Math.round(await waitFor200(`http://127.0.0.1:${port}/readyz`, proc, t0));
  } finally {
    await stop(proc);
  }
}

const mean = (xs: number[]) => Math.round(xs.reduce((a, b) => a + b, 0) / xs.length);
export async function run(argv: string[]): Promise<Record<string, unknown>> {
  const { values } = parseArgs({ args: argv, options: { starts: { type: 'string', default: '8' }, against: { type: 'string' } } });
  const starts = Number(values.starts);
  if (!Number.isInteger(starts) || starts < 1) throw new Error('--starts takes a whole number of at least 1');
  installExitHandlers();
  try {
    const builds = [prepare('this checkout', root)];
    if (values.against) builds.push(prepare(path.resolve(values.against), path.resolve(values.against)));
    for (let i = 0; i < starts; i++) {
      for (const build of i % 2 ? [...builds].reverse() : builds) {
        build.ms.push(await startOnce(build));
        build.firstMs.push(await firstStart(build));
      }
      process.stderr.write(`start-up: ${i + 1}/${starts}: ${builds.map((b) => `${b.name} restart ${b.ms[i]} ms, first start ${b.firstMs[i]} ms`).join('; ')}\n`);
    }
    return {
      machine: machine(),
      starts,
      builds: builds.map((b) => ({
        build: b.name,
        restart: { msToReadyz: b.ms, meanMs: mean(b.ms), medianMs: Math.round(median(b.ms)) },
        firstStart: { msToReadyz: b.firstMs, meanMs: mean(b.firstMs), medianMs: Math.round(median(b.firstMs)) },
      })),
    };
  } finally {
    await cleanupAll();
  }
}
