import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';

const root = path.resolve(import.meta.dirname, '../..');
// The build, kept current by the suites' global setup (build-setup.ts).
const nodeArgs = ['--no-node-snapshot', path.join(root, 'dist/main.js')];

/**
 * The secrets' key of spawned processes and PostgreSQL-backed test servers (with DATABASE_URL a server
 * refuses to start without one). Embedded in-process test servers use the key file of their data directory.
 */
export const TEST_ENCRYPTION_KEY = 'dGVzdC1vbmx5LWtleS0zMi1ieXRlcy1sb25nLXh4eHg=';

/**
 * scrypt at its lowest cost: hashing at the production cost made the sign-in suites spend minutes
 * hashing. The production floor still holds outside NODE_ENV=test (src/config.ts).
 */
export const FAST_PASSWORD_HASHING = { NODE_ENV: 'test', WEFT_PASSWORD_HASH_COST: '10' } as const;

/** Runs the built CLI in a child process; resolves with its exit code and output. */
export function runCli(args: string[], env: Record<string, string | undefined>, stdin?: string): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [...nodeArgs, ...args], { cwd: root, env: { WEFT_ENCRYPTION_KEY: TEST_ENCRYPTION_KEY, WEFT_AI_SETTLE_WINDOW_MS: '0', ...FAST_PASSWORD_HASHING, ...process.env, LOG_LEVEL: 'warn', ...env } });
    if (stdin !== undefined) child.stdin.end(stdin);
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code: code ?? -1, stdout, stderr }));
  });
}

/**
 * A spawned server lives seconds. V8's optimizing compiles of PGlite's WebAssembly cost each embedded one
 * about 1 s of CPU that it ends before using: seven files that spawn 15 servers took 98 and 108 s of CPU with
 * this flag, against 116 and 134 without (bench/RESULTS.md, "a CLI command's WebAssembly"). Only the machine
 * code differs from `npm start`; short CLI commands run the same way (src/cli/session.ts).
 */
const SPAWNED_SERVER_FLAGS = ['--liftoff-only'];

/** Starts `weft serve` in a child process and waits until it answers /healthz. */
export async function spawnServer(
  env: Record<string, string | undefined>,
  port: number,
  command: 'serve' | 'api' | 'worker' = 'serve',
): Promise<{ child: ChildProcess; url: string; output: () => string }> {
  const child = spawn(process.execPath, [...SPAWNED_SERVER_FLAGS, ...nodeArgs, command], {
    cwd: root,
    // A worker has no /healthz: its start-up log line tells it is ready.
    // Settlements before the answer (balances read right after a request), as in-process test servers.
    env: { WEFT_ENCRYPTION_KEY: TEST_ENCRYPTION_KEY, WEFT_AI_SETTLE_WINDOW_MS: '0', ...FAST_PASSWORD_HASHING, ...process.env, LOG_LEVEL: command === 'worker' ? 'info' : 'warn', HOST: '127.0.0.1', PORT: String(port), ...env },
  });
  let out = '';
  child.stdout?.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr?.on('data', (d: Buffer) => (out += d.toString()));
  // A server that ends on its own with an error (not by a test's signal) shows why, beside the test's failure.
  child.once('exit', (code, signal) => {
    if (signal === null && code !== 0) process.stderr.write(`weft ${command} on port ${port} exited with code ${code}:\n${out}\n`);
  });
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 60_000;
  if (command === 'worker') {
    // No HTTP: ready once it logged that it runs jobs.
    while (Date.now() < deadline && !out.includes('Weft worker running')) {
      if (child.exitCode !== null) throw new Error(`worker exited early (${child.exitCode}):\n${out}`);
      await new Promise((r) => setTimeout(r, 200));
    }
    return { child, url, output: () => out };
  }
  // The child's own banner first: the port was free when freePort() closed it, but another process may have
  // taken it since, and its /healthz would answer for a child that could not listen.
  const banner = ` Weft is listening on ${url}\n`;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`server exited early (${child.exitCode}):\n${out}`);
    try {
      if (out.includes(banner) && (await fetch(`${url}/healthz`)).ok) return { child, url, output: () => out };
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  child.kill('SIGKILL');
  throw new Error(`server did not start:\n${out}`);
}

export async function freePort(): Promise<number> {
  const net = await import('node:net');
  return new Promise((resolve) => {
    const srv = net.createServer();
    srv.listen(0, '127.0.0.1', () => {
      const addr = srv.address();
      const port = typeof addr === 'object' && addr ? addr.port : 0;
      srv.close(() => resolve(port));
    });
  });
}
