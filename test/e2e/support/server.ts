// A real Weft server for end-to-end tests: the built CLI (dist/main.js) on a fresh embedded data
// directory and a free port, set up with `weft setup --json` so the admin's email, one-time password
// and a workspace key are known. See ./index.ts for the whole harness API.
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';

export const repoRoot = path.resolve(import.meta.dirname, '../../..');
const mainJs = path.join(repoRoot, 'dist/main.js');

export interface ApiResponse {
  status: number;
  headers: Headers;
  // Specs read arbitrary JSON shapes; `any` stays inside the test suite.
  body: any;
}

export interface E2eApp {
  /** Base URL, e.g. http://127.0.0.1:41234 (no trailing slash). */
  url: string;
  dataDir: string;
  adminEmail: string;
  /** The admin's current password (the one-time one when `keepOneTimePassword`). */
  adminPassword: string;
  /** The one-time password `weft setup` printed. */
  oneTimePassword: string;
  /** A workspace key of the `default` workspace (from `weft setup`). */
  apiKey: string;
  workspaceId: string;
  adminUserId: string;
  /** fetch with the workspace key (X-API-Key) unless `headers` replaces it; JSON in and out. */
  api(method: string, urlPath: string, body?: unknown, headers?: Record<string, string>): Promise<ApiResponse>;
  /** Runs the CLI against this server's data directory; parses the --json output it adds. */
  cli(args: string[]): Promise<any>;
  /** A user (CLI `weft users create`) with a known password, a member of the default workspace with `role`. */
  createUser(opts: { email: string; role: 'admin' | 'write' | 'read'; password?: string; name?: string }): Promise<{ id: string; email: string; password: string }>;
  /** Server stdout and stderr so far (JSON log lines at LOG_LEVEL=warn). */
  output(): string;
  stop(): Promise<void>;
}

export interface StartAppOptions {
  /** Leave the admin with the printed one-time password (mustChangePassword set). Default: it is replaced by a known one. */
  keepOneTimePassword?: boolean;
  /** Extra environment for the server and CLI. */
  env?: Record<string, string>;
}

/** The password the harness gives the admin when it does not keep the one-time one. */
export const ADMIN_PASSWORD = 'e2e-admin-password-0123';

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const addr = srv.address();
      const port = typeof addr === 'object' && addr ? addr.port : 0;
      srv.close(() => resolve(port));
    });
  });
}

function runNode(args: string[], env: NodeJS.ProcessEnv): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--no-node-snapshot', mainJs, ...args], { cwd: repoRoot, env });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code: code ?? -1, stdout, stderr }));
  });
}

async function jsonFetch(url: string, method: string, body: unknown, headers: Record<string, string>): Promise<ApiResponse> {
  const init: RequestInit = { method, headers: { ...headers } };
  if (body !== undefined) {
    init.body = JSON.stringify(body);
    (init.headers as Record<string, string>)['content-type'] = 'application/json';
  }
  const res = await fetch(url, init);
  const text = await res.text();
  let parsed: unknown;
  try {
    parsed = text ? JSON.parse(text) : undefined;
  } catch {
    parsed = text;
  }
  return { status: res.status, headers: res.headers, body: parsed };
}

interface SetupOutput { adminEmail: string; adminPassword: string; apiKey: string; workspaceId: string; userId: string }

/**
 * `weft setup --json` on `dataDir`. Creating an embedded database costs 10 s or more, so the first spec of
 * a run sets up a template directory (keyed by the build) and later specs copy it: each still gets its own
 * database, with the same admin, one-time password and key. Specs that pass their own environment set up
 * from scratch, since it could change what setup does.
 */
async function setUpDataDir(dataDir: string, cli: (args: string[]) => Promise<any>, ownEnv = false): Promise<SetupOutput> {
  const checked = (out: SetupOutput) => {
    if (typeof out.adminPassword !== 'string') throw new Error(`weft setup --json gave no adminPassword: ${JSON.stringify(out)}`);
    return out;
  };
  if (ownEnv) return checked(await cli(['setup']));
  const build = fs.statSync(mainJs).mtimeMs.toFixed(0);
  const template = path.join(os.tmpdir(), `weft-e2e-template-${build}`);
  const outputFile = path.join(template, '.setup.json');
  if (!fs.existsSync(outputFile)) {
    const out = checked(await cli(['setup']));
    // Templates of earlier builds are of no further use.
    for (const old of fs.readdirSync(os.tmpdir())) if (old.startsWith('weft-e2e-template-')) fs.rmSync(path.join(os.tmpdir(), old), { recursive: true, force: true });
    const tmp = `${template}.tmp-${process.pid}`;
    fs.rmSync(tmp, { recursive: true, force: true });
    fs.cpSync(dataDir, tmp, { recursive: true });
    fs.writeFileSync(path.join(tmp, '.setup.json'), JSON.stringify(out));
    fs.rmSync(template, { recursive: true, force: true });
    fs.renameSync(tmp, template);
    return out;
  }
  fs.cpSync(template, dataDir, { recursive: true, filter: (src) => src !== outputFile });
  return checked(JSON.parse(fs.readFileSync(outputFile, 'utf8')) as SetupOutput);
}

/** Starts `weft serve` from dist/ on a fresh data directory; `npm run build` must have run (it builds web/ too). */
export async function startApp(opts: StartAppOptions = {}): Promise<E2eApp> {
  if (!fs.existsSync(mainJs)) throw new Error(`${mainJs} is missing: run \`npm run build\` before the e2e tests`);
  if (!fs.existsSync(path.join(repoRoot, 'web/dist/index.html')) && !opts.env?.WEFT_WEB_DIST) {
    throw new Error('web/dist/index.html is missing: run `npm run build` (it builds the dashboard) before the e2e tests');
  }
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'weft-e2e-'));
  const port = await freePort();
  const env: NodeJS.ProcessEnv = {
    ...process.env, LOG_LEVEL: 'warn', HOST: '127.0.0.1', PORT: String(port), WEFT_DATA_DIR: dataDir,
    WEFT_DEFAULT_PLAN: 'enterprise', DATABASE_URL: '', REDIS_URL: '', ...opts.env,
  };
  const cli = async (args: string[]) => {
    const r = await runNode([...args, '--json'], env);
    let out: unknown;
    try {
      out = JSON.parse(r.stdout.trim().split('\n').pop() ?? '');
    } catch {
      throw new Error(`weft ${args.join(' ')} printed no JSON (exit ${r.code}):\n${r.stdout}\n${r.stderr}`);
    }
    if (r.code !== 0) throw new Error(`weft ${args.join(' ')} failed (exit ${r.code}): ${JSON.stringify(out)}\n${r.stderr}`);
    return out as any;
  };

  const setup = await setUpDataDir(dataDir, cli, opts.env !== undefined);

  const child: ChildProcess = spawn(process.execPath, ['--no-node-snapshot', mainJs, 'serve'], { cwd: repoRoot, env });
  let out = '';
  child.stdout?.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr?.on('data', (d: Buffer) => (out += d.toString()));
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 90_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`server exited early (${child.exitCode}):\n${out}`);
    const up = await fetch(`${url}/healthz`).then((r) => r.ok, () => false);
    if (up) break;
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`server did not start within 90 s:\n${out}`);
    }
    await new Promise((r) => setTimeout(r, 200));
  }

  const stop = async () => {
    if (child.exitCode === null) {
      const exited = new Promise((r) => child.once('exit', r));
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 15_000);
      await exited;
      clearTimeout(timer);
    }
    fs.rmSync(dataDir, { recursive: true, force: true });
  };

  const app: E2eApp = {
    url, dataDir,
    adminEmail: setup.adminEmail,
    adminPassword: setup.adminPassword,
    oneTimePassword: setup.adminPassword,
    apiKey: setup.apiKey,
    workspaceId: setup.workspaceId,
    adminUserId: setup.userId,
    api: (method, p, body, headers = {}) => jsonFetch(url + p, method, body, { 'x-api-key': setup.apiKey, ...headers }),
    cli,
    async createUser(o) {
      const args = ['users', 'create', '--email', o.email, '--workspace', app.workspaceId, '--role', o.role];
      if (o.name) args.push('--name', o.name);
      if (o.password) args.push('--password', o.password);
      const created = await cli(args);
      return { id: created.id, email: created.email, password: o.password ?? created.password };
    },
    output: () => out,
    stop,
  };

  if (!opts.keepOneTimePassword) {
    try {
      await setPassword(app, app.adminEmail, app.oneTimePassword, ADMIN_PASSWORD);
      app.adminPassword = ADMIN_PASSWORD;
    } catch (err) {
      await stop();
      throw err;
    }
  }
  return app;
}

/** Signs in over HTTP and changes the password (which clears mustChangePassword), then signs out. */
export async function setPassword(app: E2eApp, email: string, current: string, next: string): Promise<void> {
  const login = await fetch(`${app.url}/api/v1/auth/login`, {
    method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email, password: current }),
  });
  if (login.status !== 200) throw new Error(`login as ${email} failed: ${login.status} ${await login.text()}`);
  const { csrfToken } = (await login.json()) as { csrfToken: string };
  const cookie = (login.headers.get('set-cookie') ?? '').split(';')[0] ?? '';
  const res = await fetch(`${app.url}/api/v1/auth/password`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', cookie, 'x-csrf-token': csrfToken },
    body: JSON.stringify({ currentPassword: current, newPassword: next }),
  });
  if (res.status !== 204) throw new Error(`password change for ${email} failed: ${res.status} ${await res.text()}`);
}
