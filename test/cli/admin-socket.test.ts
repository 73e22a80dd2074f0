// The CLI beside a running embedded server: every command reaches the server through its admin socket
// (one spawned server shared by the file), backups while it serves, and a second server refused at once.
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runningServer } from '../../src/cli/session.js';
import { bootstrappedDatabase, dbMode, request } from '../support/harness.js';
import { freePort, runCli, spawnServer } from '../support/cli.js';
import { runTempDir } from '../support/temp-dirs.js';

const stop = async (child: ChildProcess): Promise<number | null> => {
  if (child.exitCode !== null) return child.exitCode;
  const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
  child.kill('SIGTERM');
  return exited;
};

const tempDir = () => runTempDir('cli-');

describe.skipIf(dbMode() !== 'pglite')('CLI beside a running embedded server', () => {
  let boot: Awaited<ReturnType<typeof bootstrappedDatabase>>;
  let server: Awaited<ReturnType<typeof spawnServer>>;
  let dataDir: string;
  const cli = (args: string[], env: Record<string, string | undefined> = boot.env) => runCli([...args, '--json'], env);
  const ok = async (args: string[], env?: Record<string, string | undefined>) => {
    const r = await cli(args, env);
    expect(r.code, r.stderr).toBe(0);
    return JSON.parse(r.stdout);
  };
  const api = (p: string, key: string, method = 'GET', body?: unknown) => request(`${server.url}${p}`, method, body, { 'x-api-key': key });

  beforeAll(async () => {
    boot = await bootstrappedDatabase();
    dataDir = boot.where.dataDir!;
    server = await spawnServer(boot.env, await freePort());
  }, 120_000);

  afterAll(async () => {
    if (server) expect(await stop(server.child)).toBe(0);
    // A clean shutdown removes the socket and server.json.
    expect(fs.existsSync(path.join(dataDir, 'admin.sock'))).toBe(false);
    expect(fs.existsSync(path.join(dataDir, 'server.json'))).toBe(false);
  }, 60_000);

  it('listens on an owner-only socket in the data directory and records itself in server.json', () => {
    const socket = path.join(dataDir, 'admin.sock');
    const st = fs.statSync(socket);
    expect(st.isSocket()).toBe(true);
    expect(st.mode & 0o777).toBe(0o600);
    const info = JSON.parse(fs.readFileSync(path.join(dataDir, 'server.json'), 'utf8'));
    expect(info).toMatchObject({ pid: server.child.pid, url: server.url, socket });
    expect(runningServer(dataDir)?.pid).toBe(server.child.pid);
  });

  it('creates users and keys, grants credits, and the server sees them at once', async () => {
    const user = await ok(['users', 'create', '--email', 'ops@example.com', '--workspace', 'default', '--role', 'read']);
    const key = await ok(['keys', 'create', '--workspace', 'default', '--personal', '--user', user.id, '--name', 'ops']);
    // The personal key of the new user authenticates, with the role it was given: read, not admin.
    expect((await api(`/api/v1/workflows?workspaceId=${boot.workspaceId}`, key.key)).status).toBe(200);
    expect((await api(`/api/v1/keys?workspaceId=${boot.workspaceId}`, key.key)).status).toBe(403);

    const granted = await ok(['credits', 'grant', '--workspace', 'default', '--usd', '7.5']);
    expect(granted.balanceUsd).toBe(7.5);
    const balance = await api('/api/v1/ai/credits', boot.apiKey);
    expect(balance.status).toBe(200);
    expect(balance.body).toMatchObject({ account: `workspace:${boot.workspaceId}`, balanceUsd: 7.5 });

    // A command that fails inside the server: a JSON error and exit code 1.
    const failed = await cli(['keys', 'create', '--workspace', 'nope']);
    expect(failed.code).toBe(1);
    expect(JSON.parse(failed.stdout)).toEqual({ error: 'No workspace with id or name "nope"' });
  }, 60_000);

  it('deploys a workflow and runs it, sync and async (following the job)', async () => {
    const dir = tempDir();
    const file = path.join(dir, 'greet.json');
    fs.writeFileSync(file, JSON.stringify({
      name: 'greet',
      blocks: [
        { id: 'start', type: 'start', name: 'Start', config: { inputFormat: [{ name: 'who', type: 'string' }] } },
        { id: 'greet', type: 'function', name: 'Greet', config: { code: "if (<start.who> === 'nobody') throw new Error('no one to greet'); return { text: 'hello ' + <start.who> }" } },
      ],
      edges: [{ from: 'start', to: 'greet' }],
    }));
    const deployed = await ok(['workflows', 'deploy', file, '--workspace', 'default']);
    expect(deployed).toEqual({ workflowId: expect.any(String), version: 1 });
    const listed = await api(`/api/v1/workflows/${deployed.workflowId}`, boot.apiKey);
    expect(listed.status).toBe(200);

    const [sync, queued, failed] = await Promise.all([
      ok(['workflows', 'run', deployed.workflowId, '--input', '{"who":"world"}']),
      ok(['workflows', 'run', 'greet', '--workspace', 'default', '--input', '{"who":"async"}', '--async']),
      cli(['workflows', 'run', deployed.workflowId, '--input', '{"who":"nobody"}']),
    ]);
    expect(sync).toMatchObject({ workflowId: deployed.workflowId, status: 'completed', output: { text: 'hello world' } });
    // The runs are the server's: its logs and job status show them.
    expect((await api(`/api/v1/logs/${sync.executionId}`, boot.apiKey)).status).toBe(200);
    expect(queued).toMatchObject({ status: 'completed', output: { text: 'hello async' } });
    expect((await api(`/api/jobs/job_${queued.executionId}`, boot.apiKey)).body).toMatchObject({ status: 'completed' });
    expect(failed.code).toBe(1);
    expect(JSON.parse(failed.stdout)).toMatchObject({ status: 'failed', error: expect.stringContaining('no one to greet') });
  }, 90_000);

  it('refuses a second server on the same data directory at once, naming the running one', async () => {
    const second = await runCli(['serve'], { ...boot.env, PORT: String(await freePort()), HOST: '127.0.0.1' });
    expect(second.code).toBe(1);
    expect(second.stdout).toBe(''); // no banner, nothing on stdout
    expect(second.stderr).toContain(`in use by process ${server.child.pid}`);
    expect(second.stderr).toContain(server.url);
    // One line of the CLI's own (the database opens while the server's modules load: its failure must not
    // escape as an unhandled rejection with a stack trace).
    expect(second.stderr.trim()).toMatch(/^weft: The data directory /);
    expect(second.stderr).not.toMatch(/^\s+at /m);
  }, 60_000);

  it('backs up while the server runs; a new server starts from the backup with the data intact', async () => {
    const key = await ok(['keys', 'create', '--workspace', 'default', '--name', 'before the backup']);
    const file = path.join(tempDir(), 'weft.tar.gz');
    const backup = await ok(['backup', file]);
    expect(backup).toMatchObject({ file, via: 'server' });
    expect(fs.statSync(file).size).toBe(backup.bytes);

    const restoredDir = tempDir();
    const env = { WEFT_DATA_DIR: restoredDir, DATABASE_URL: undefined };
    expect(await ok(['restore', file], env)).toMatchObject({ dataDir: restoredDir });

    const copy = await spawnServer(env, await freePort());
    try {
      const r = await request(`${copy.url}/api/v1/workflows?workspaceId=${boot.workspaceId}`, 'GET', undefined, { 'x-api-key': key.key });
      expect(r.status).toBe(200);
      expect((r.body as { data: { name: string }[] }).data.map((w) => w.name)).toContain('greet');
    } finally {
      expect(await stop(copy.child)).toBe(0);
    }
    // No server on it now: the CLI opens the restored database itself and runs the job in its own process.
    const direct = await ok(['workflows', 'run', 'greet', '--workspace', 'default', '--input', '{"who":"restored"}', '--async'], env);
    expect(direct).toMatchObject({ status: 'completed', output: { text: 'hello restored' } });
  }, 150_000);
});

describe('finding the running server', () => {
  it('ignores a server.json whose process is gone (killed without cleaning up)', async () => {
    const dir = tempDir();
    const child = spawn(process.execPath, ['-e', ''], { stdio: 'ignore' });
    const pid = child.pid!;
    await new Promise((r) => child.once('exit', r));
    fs.writeFileSync(path.join(dir, 'weft.lock'), String(pid));
    fs.writeFileSync(path.join(dir, 'server.json'), JSON.stringify({ pid, url: 'http://127.0.0.1:1', socket: path.join(dir, 'admin.sock'), startedAt: '' }));
    expect(runningServer(dir)).toBeUndefined();
    // Held by this live process (as far as the lock says): found.
    fs.writeFileSync(path.join(dir, 'weft.lock'), String(process.ppid));
    fs.writeFileSync(path.join(dir, 'server.json'), JSON.stringify({ pid: process.ppid, url: 'http://127.0.0.1:1', socket: path.join(dir, 'admin.sock'), startedAt: '' }));
    expect(runningServer(dir)?.pid).toBe(process.ppid);
  });
});

describe.skipIf(dbMode() !== 'pglite')('CLI errors with --json', () => {
  const env = { WEFT_DATA_DIR: path.join(os.tmpdir(), 'weft-cli-unused') };
  const jsonError = async (args: string[], extra: Record<string, string> = {}) => {
    const r = await runCli(args, { ...env, ...extra });
    expect(r.code).toBe(1);
    return JSON.parse(r.stdout) as { error: string }; // stdout holds only the JSON document
  };

  it('answers unknown commands, missing options and arguments, and backups of PostgreSQL with a JSON error', async () => {
    const [unknown, missingOption, missingArgument, pg] = await Promise.all([
      jsonError(['frobnicate', '--json']),
      jsonError(['keys', 'create', '--json']),
      jsonError(['workflows', 'run', '--json']),
      jsonError(['backup', 'out.tar.gz', '--json'], { DATABASE_URL: 'postgres://nobody@127.0.0.1:1/none' }),
    ]);
    expect(unknown.error).toMatch(/unknown command 'frobnicate'/);
    expect(missingOption.error).toMatch(/required option '--workspace <idOrName>' not specified/);
    expect(missingArgument.error).toMatch(/missing required argument 'workflow'/);
    expect(pg.error).toMatch(/pg_dump/);
  }, 60_000);
});
