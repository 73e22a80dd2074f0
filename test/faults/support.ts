import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { connectDatabase } from '../../src/db/connect.js';
import type { Database } from '../../src/db/database.js';
import { migrate } from '../../src/db/migrate.js';
import { createKey, ensureBootstrap } from '../support/accounts.js';
import { freePort, spawnServer } from '../support/cli.js';
import { request } from '../support/harness.js';

/**
 * Throwaway infrastructure for the fault suites: a PostgreSQL cluster and a Redis server of the
 * test's own, on private ports (and a private socket directory), which the test may stop, restart and
 * cut off as it likes. The shared instances on 5432 and 6379 are never touched.
 */

const PG_BIN = process.env.WEFT_FAULTS_PG_BIN ?? findPgBin();

function findPgBin(): string {
  const root = '/usr/lib/postgresql';
  const versions = fs.existsSync(root) ? fs.readdirSync(root).filter((v) => fs.existsSync(path.join(root, v, 'bin', 'initdb'))) : [];
  versions.sort((a, b) => Number(b) - Number(a));
  if (versions[0]) return path.join(root, versions[0], 'bin');
  return path.dirname(execFileSync('sh', ['-c', 'command -v initdb'], { encoding: 'utf8' }).trim());
}

/** Runs a PostgreSQL binary as the `postgres` user when we are root (initdb refuses root). */
function asPostgres(bin: string, args: string[]): string {
  const cmd = path.join(PG_BIN, bin);
  if (process.getuid?.() === 0) {
    const line = [cmd, ...args].map((a) => `'${a.replace(/'/g, "'\\''")}'`).join(' ');
    return execFileSync('su', ['postgres', '-s', '/bin/sh', '-c', line], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
  }
  return execFileSync(cmd, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
}

export interface ThrowawayPostgres {
  port: number;
  /** The server's URL for a database (default `postgres`). */
  url(db?: string): string;
  start(): void;
  /** `fast` disconnects clients and shuts down cleanly; `immediate` is like a crash (recovery at start). */
  stop(mode?: 'fast' | 'immediate'): void;
  restart(mode?: 'fast' | 'immediate'): void;
  /** Terminates the backends whose application_name starts with `prefix`; how many. */
  terminate(prefix: string): Promise<number>;
  destroy(): void;
}

export async function startPostgres(): Promise<ThrowawayPostgres> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'weft-faults-pg-'));
  fs.chmodSync(dir, 0o755);
  if (process.getuid?.() === 0) execFileSync('chown', ['postgres:postgres', dir]);
  const data = path.join(dir, 'data');
  const port = await freePort();
  asPostgres('initdb', ['-D', data, '-U', 'postgres', '--auth=trust', '-E', 'UTF8', '--no-sync']);
  // fsync=off is safe here: the faults kill PostgreSQL's processes, never the machine, and written WAL
  // survives in the OS page cache. synchronous_commit stays on: with it off, a commit is acknowledged
  // before its WAL leaves shared memory, so an immediate stop loses it and the durability checks
  // (no accepted run lost) would fail for a reason of the test's own making.
  const opts = `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c fsync=off -c full_page_writes=off -c max_connections=200`;
  let running = false;
  const pg: ThrowawayPostgres = {
    port,
    url: (db = 'postgres') => `postgres://postgres@127.0.0.1:${port}/${db}`,
    start() {
      asPostgres('pg_ctl', ['-D', data, '-l', path.join(dir, 'server.log'), '-o', opts, '-w', '-t', '60', 'start']);
      running = true;
    },
    stop(mode = 'fast') {
      asPostgres('pg_ctl', ['-D', data, '-m', mode, '-w', '-t', '60', 'stop']);
      running = false;
    },
    restart(mode = 'fast') {
      pg.stop(mode);
      pg.start();
    },
    async terminate(prefix) {
      const admin = await connectDatabase({ databaseUrl: pg.url(), dataDir: '', applicationName: 'faults-admin' });
      try {
        const rows = await admin.query<{ ok: boolean }>(
          "SELECT pg_terminate_backend(pid) AS ok FROM pg_stat_activity WHERE application_name LIKE $1 || '%' AND pid <> pg_backend_pid()",
          [prefix],
        );
        return rows.filter((r) => r.ok).length;
      } finally {
        await admin.close();
      }
    },
    destroy() {
      try {
        if (running) pg.stop('immediate');
      } catch {
        // already down
      }
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
  pg.start();
  return pg;
}

export interface ThrowawayRedis {
  url: string;
  start(): Promise<void>;
  stop(): Promise<void>;
  /** Stopped and started again without persistence: everything it held is gone. */
  restart(): Promise<void>;
  flush(): void;
}

export async function startRedis(): Promise<ThrowawayRedis> {
  const port = await freePort();
  let child: ChildProcess | undefined;
  const cli = (...args: string[]) => execFileSync('redis-cli', ['-h', '127.0.0.1', '-p', String(port), ...args], { encoding: 'utf8' });
  const r: ThrowawayRedis = {
    url: `redis://127.0.0.1:${port}`,
    async start() {
      child = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', os.tmpdir()], { stdio: 'ignore' });
      for (let i = 0; i < 100; i++) {
        try {
          if (cli('ping').trim() === 'PONG') return;
        } catch {
          // not up yet
        }
        await sleep(100);
      }
      throw new Error('redis-server did not start');
    },
    async stop() {
      const c = child;
      child = undefined;
      if (!c || c.exitCode !== null) return;
      const exited = new Promise((res) => c.once('exit', res));
      c.kill('SIGKILL');
      await exited;
    },
    async restart() {
      await r.stop();
      await r.start();
    },
    flush() {
      cli('FLUSHALL');
    },
  };
  await r.start();
  return r;
}

export const sleep = (ms: number) => new Promise((res) => setTimeout(res, ms));

/** Creates a database on the throwaway server, migrated, with the admin, a workspace and its key. */
export async function prepareDatabase(pg: ThrowawayPostgres, name: string): Promise<{ url: string; apiKey: string; workspaceId: string }> {
  const admin = await connectDatabase({ databaseUrl: pg.url(), dataDir: '' });
  await admin.exec(`CREATE DATABASE ${name}`);
  await admin.close();
  const url = pg.url(name);
  const db = await connectDatabase({ databaseUrl: url, dataDir: '' });
  try {
    await db.exec('CREATE EXTENSION IF NOT EXISTS vector');
    await migrate(db);
    const boot = await ensureBootstrap(db, 'enterprise');
    const { secret } = await createKey(db, { workspaceId: boot.workspaceId, userId: boot.userId, type: 'workspace' });
    return { url, apiKey: secret, workspaceId: boot.workspaceId };
  } finally {
    await db.close();
  }
}

export interface Proc {
  child: ChildProcess;
  url: string;
  output: () => string;
  role: 'api' | 'worker';
}

export async function spawnRole(env: Record<string, string | undefined>, role: 'api' | 'worker'): Promise<Proc> {
  const p = await spawnServer(env, role === 'api' ? await freePort() : 0, role);
  return { ...p, role };
}

/** SIGKILL: the process dies at once, holding whatever it held. */
export async function kill(p: Proc, signal: NodeJS.Signals = 'SIGKILL'): Promise<number | null> {
  if (p.child.exitCode !== null || p.child.signalCode !== null) return p.child.exitCode;
  const exited = new Promise<number | null>((res) => p.child.once('exit', (code) => res(code)));
  p.child.kill(signal);
  return exited;
}

/** A local HTTP endpoint that counts hits per path, answering after `?delay=` ms. */
export async function countingUpstream(): Promise<{ url: string; hits: Map<string, number[]>; close: () => void }> {
  const hits = new Map<string, number[]>();
  const server = http.createServer((req, res) => {
    const u = new URL(req.url ?? '/', 'http://x');
    const list = hits.get(u.pathname) ?? [];
    list.push(Date.now());
    hits.set(u.pathname, list);
    const delay = Number(u.searchParams.get('delay') ?? 0);
    setTimeout(() => {
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({ ok: true, path: u.pathname }));
    }, delay);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  const addr = server.address();
  return {
    url: `http://127.0.0.1:${typeof addr === 'object' && addr ? addr.port : 0}`,
    hits,
    close: () => {
      server.closeAllConnections();
      server.close();
    },
  };
}

/** Creates and deploys a workflow through the API; its id. */
export async function deployWorkflow(apiUrl: string, apiKey: string, workspaceId: string, name: string, definition: unknown): Promise<string> {
  const h = { 'x-api-key': apiKey };
  const created = await request(`${apiUrl}/api/v1/workflows`, 'POST', { workspaceId, name, definition }, h);
  if (created.status !== 201 && created.status !== 200) throw new Error(`create failed: ${created.status} ${created.text}`);
  const id = created.body.data.workflow.id as string;
  const dep = await request(`${apiUrl}/api/v1/workflows/${id}/deploy`, 'POST', undefined, h);
  if (dep.status !== 200) throw new Error(`deploy failed: ${dep.status} ${dep.text}`);
  return id;
}

/** Two HTTP calls to the counting endpoint, each answered after a delay. */
export function twoHitDefinition(upstream: string, delayMs: number, secondDelayMs = delayMs) {
  return {
    blocks: [
      { id: 'start', type: 'start', name: 'Start', config: { inputFormat: [{ name: 'i', type: 'number' }] } },
      { id: 'a', type: 'http', name: 'A', config: { url: `${upstream}/hit/<start.i>/a?delay=${delayMs}` } },
      { id: 'b', type: 'http', name: 'B', config: { url: `${upstream}/hit/<start.i>/b?delay=${secondDelayMs}` } },
    ],
    edges: [{ from: 'start', to: 'a' }, { from: 'a', to: 'b' }],
  };
}

/** Polls until `check` returns a value (not undefined) or the deadline passes. */
export async function waitFor<T>(what: string, check: () => Promise<T | undefined>, timeoutMs: number, everyMs = 250): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  while (Date.now() < deadline) {
    try {
      const v = await check();
      if (v !== undefined) return v;
    } catch (err) {
      last = err;
    }
    await sleep(everyMs);
  }
  throw new Error(`timed out waiting for ${what}${last ? ` (last error: ${(last as Error).message})` : ''}`);
}

/** A pool for the test's own queries, on the throwaway server. */
export function openDb(url: string): Promise<Database> {
  return connectDatabase({ databaseUrl: url, dataDir: '', applicationName: 'faults-test' });
}
