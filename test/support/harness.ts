import fs from 'node:fs';
import { loadConfig, type Config } from '../../src/config.js';
import { connectDatabase } from '../../src/db/connect.js';
import { startServer, type RunningServer, type StartOptions as ServerStartOptions } from '../../src/server.js';
import { createKey, createWorkspace, ensureBootstrap } from './accounts.js';
import { FAST_PASSWORD_HASHING, TEST_ENCRYPTION_KEY } from './cli.js';
import { pgliteTemplateDir, postgresTemplateName, postgresUrlFor, testDatabaseName } from './templates.js';
import { runTempDir } from './temp-dirs.js';

export type DbMode = 'pglite' | 'postgres';
export const dbMode = (): DbMode => (process.env.WEFT_TEST_DB === 'postgres' ? 'postgres' : 'pglite');

export interface TestServer {
  server: RunningServer;
  url: string;
  apiKey: string;
  workspaceId: string;
  userId: string;
  config: Config;
  /** fetch against the server with the bootstrap key unless `headers` overrides it. */
  call(method: string, path: string, body?: unknown, headers?: Record<string, string>): Promise<TestResponse>;
  close(): Promise<void>;
}

export interface TestResponse {
  status: number;
  headers: Headers;
  // Tests read arbitrary JSON shapes; `any` stays inside the test suite.
  body: any;
  text: string;
}

export async function request(url: string, method: string, body?: unknown, headers: Record<string, string> = {}): Promise<TestResponse> {
  const init: RequestInit = { method, headers: { ...headers } };
  if (body !== undefined) {
    init.body = typeof body === 'string' ? body : JSON.stringify(body);
    (init.headers as Record<string, string>)['content-type'] ??= 'application/json';
  }
  const res = await fetch(url, init);
  const text = await res.text();
  let parsed: unknown;
  try {
    parsed = text ? JSON.parse(text) : undefined;
  } catch {
    parsed = undefined;
  }
  return { status: res.status, headers: res.headers, body: parsed, text };
}

export interface StartOptions {
  env?: Record<string, string>;
  config?: Partial<Config>;
  /** Reuse an existing database (restart tests): a PGlite data directory or a PostgreSQL URL. */
  reuse?: { dataDir?: string; databaseUrl?: string };
  /** What the server is started with besides its configuration (a clock, a password hasher). */
  server?: Pick<ServerStartOptions, 'clock' | 'passwords'>;
}

/** Makes a fresh database for one suite from the template: a PGlite data dir on disk, or a new PostgreSQL database. */
export async function freshDatabase(): Promise<{ dataDir?: string; databaseUrl?: string }> {
  if (dbMode() === 'postgres') {
    const base = process.env.TEST_DATABASE_URL;
    if (!base) throw new Error('WEFT_TEST_DB=postgres needs TEST_DATABASE_URL');
    const name = testDatabaseName('t');
    const admin = await connectDatabase({ databaseUrl: base, dataDir: '' });
    await admin.exec(`CREATE DATABASE ${name} TEMPLATE ${postgresTemplateName()}`);
    await admin.close();
    return { databaseUrl: postgresUrlFor(base, name) };
  }
  const dir = runTempDir('data-');
  fs.cpSync(pgliteTemplateDir(), dir, { recursive: true });
  return { dataDir: dir };
}

export async function startTestServer(opts: StartOptions = {}): Promise<TestServer> {
  const where = opts.reuse ?? (await freshDatabase());
  const config = loadConfig(
    // Settlements before the answer, so a balance read right after a request has it (test/ai/settle-window.test.ts opts in).
    // Prompt counts wait for the counting thread as long as it takes: on a host busy with the whole suite, its
    // start can pass the 2 s default and the count would fall back to an estimate (tests that mean that set it).
    { LOG_LEVEL: 'silent', WEFT_DEFAULT_PLAN: 'enterprise', WEFT_AI_SETTLE_WINDOW_MS: '0', WEFT_AI_TOKEN_COUNT_TIMEOUT_MS: '60000', WEFT_EMBEDDED_FSYNC: process.env.WEFT_EMBEDDED_FSYNC, ...FAST_PASSWORD_HASHING, ...(where.databaseUrl ? { WEFT_ENCRYPTION_KEY: TEST_ENCRYPTION_KEY } : {}), ...opts.env },
    {
      port: 0,
      host: '127.0.0.1',
      dataDir: where.dataDir ?? runTempDir('unused-'),
      databaseUrl: where.databaseUrl,
      ...opts.config,
    },
  );
  const server = await startServer(config, opts.server);
  const boot = await ensureBootstrap(server.ctx.db, config.defaultPlan);
  const { secret } = await createKey(server.ctx.db, { workspaceId: boot.workspaceId, userId: boot.userId, type: 'workspace', name: 'test' });
  const url = server.url;
  return {
    server,
    url,
    apiKey: secret,
    workspaceId: boot.workspaceId,
    userId: boot.userId,
    config,
    call: (method, p, body, headers = {}) => request(url + p, method, body, { 'x-api-key': secret, ...headers }),
    close: () => server.close(),
  };
}

/** The test server as a new workspace of its own sees it (on `plan`, with a workspace key of its own). */
export async function asNewWorkspace(t: TestServer, plan: string, namePrefix = 'ws'): Promise<TestServer> {
  const ws = await createWorkspace(t.server.ctx.db, `${namePrefix}-${Date.now()}-${Math.random().toString(36).slice(2, 8)}`, t.userId, plan);
  const { secret } = await createKey(t.server.ctx.db, { workspaceId: ws.id, userId: t.userId, type: 'workspace' });
  return { ...t, workspaceId: ws.id, apiKey: secret, call: (method, p, body, headers = {}) => request(t.url + p, method, body, { 'x-api-key': secret, ...headers }) };
}

/**
 * A fresh database holding the admin, the `default` workspace and a workspace key, closed again: for
 * tests that spawn server processes on it. `env` points a spawned server at it.
 */
export async function bootstrappedDatabase(plan = 'enterprise'): Promise<{
  where: { dataDir?: string; databaseUrl?: string };
  workspaceId: string;
  userId: string;
  apiKey: string;
  env: { WEFT_DATA_DIR: string | undefined; DATABASE_URL: string | undefined; WEFT_DEFAULT_PLAN: string; WEFT_ENCRYPTION_KEY: string };
}> {
  const where = await freshDatabase();
  const db = await connectDatabase({ dataDir: where.dataDir ?? '', databaseUrl: where.databaseUrl });
  try {
    const boot = await ensureBootstrap(db, plan);
    const { secret } = await createKey(db, { workspaceId: boot.workspaceId, userId: boot.userId, type: 'workspace' });
    return {
      where, workspaceId: boot.workspaceId, userId: boot.userId, apiKey: secret,
      env: { WEFT_DATA_DIR: where.dataDir, DATABASE_URL: where.databaseUrl, WEFT_DEFAULT_PLAN: plan, WEFT_ENCRYPTION_KEY: TEST_ENCRYPTION_KEY },
    };
  } finally {
    await db.close();
  }
}
