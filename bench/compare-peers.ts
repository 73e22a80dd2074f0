// Portkey's open-source gateway (`@portkey-ai/gateway` from npm) for `npm run bench -- compare --peers`:
// installed once into bench/.peers/ (ignored by git; reruns reuse it) and started in a process of its own.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { freePort, root, start, waitFor200, type Proc } from './compare-procs.js';

// The version measured before (bench/RESULTS.md, ai-gateway-overhead); BENCH_PORTKEY_VERSION picks another.
const version = process.env.BENCH_PORTKEY_VERSION ?? '1.15.2';
const peers = path.join(root, 'bench/.peers');

/** Installs the package unless this version is already there; resolves with the path of its bin script. */
async function install(): Promise<string> {
  const prefix = path.join(peers, `portkey-${version}`);
  const pkgDir = path.join(prefix, 'node_modules/@portkey-ai/gateway');
  const bin = () => {
    const pkg = JSON.parse(fs.readFileSync(path.join(pkgDir, 'package.json'), 'utf8')) as { bin?: string | Record<string, string> };
    const rel = typeof pkg.bin === 'string' ? pkg.bin : Object.values(pkg.bin ?? {})[0];
    if (!rel) throw new Error('@portkey-ai/gateway names no bin script');
    return path.join(pkgDir, rel);
  };
  if (fs.existsSync(path.join(pkgDir, 'package.json'))) return bin();
  fs.mkdirSync(prefix, { recursive: true });
  // A folder of scratch installs: nothing in it belongs in the repository.
  fs.writeFileSync(path.join(peers, '.gitignore'), '*\n');
  process.stderr.write(`compare: installing @portkey-ai/gateway@${version} into ${path.relative(root, prefix)} (once)\n`);
  // Its install script (patch-package) is not needed to run the built server; the output goes to stderr
  // so stdout keeps only the bench's JSON line.
  const code = await new Promise<number | null>((resolve, reject) => {
    const child = spawn('npm', ['install', '--prefix', prefix, '--no-audit', '--no-fund', '--ignore-scripts', `@portkey-ai/gateway@${version}`], {
      cwd: prefix, stdio: ['ignore', 2, 2],
    });
    child.once('error', reject);
    child.once('exit', resolve);
  });
  if (code !== 0) {
    fs.rmSync(prefix, { recursive: true, force: true });
    throw new Error(`npm install @portkey-ai/gateway@${version} failed (${code})`);
  }
  return bin();
}

export interface Peer { name: string; version: string; url: string; proc: Proc; headers: (upstreamBase: string) => Record<string, string> }

export async function startPortkey(): Promise<Peer> {
  const bin = await install();
  const port = await freePort();
  const t0 = performance.now();
  const proc = start('portkey', process.execPath, [bin, `--port=${port}`, '--headless'], { env: { ...process.env, NODE_ENV: 'production' } });
  const url = `http://127.0.0.1:${port}`;
  // Any answer means it listens; its root path answers 200.
  await waitFor200(url, proc, t0, 60_000);
  return {
    name: 'portkey', version, url, proc,
    headers: (upstreamBase) => ({ 'x-portkey-provider': 'openai', 'x-portkey-custom-host': upstreamBase }),
  };
}
