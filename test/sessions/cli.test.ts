// The CLI's side of the dashboard sign-in: the admin's one-time password from setup and the first
// start, `weft users create --password`, `weft users reset-password`; each checked by signing in.
import { describe, expect, it } from 'vitest';
import { freePort, runCli, spawnServer } from '../support/cli.js';
import { freshDatabase, request } from '../support/harness.js';

const ONE_TIME = /^[A-Za-z0-9]{5}(-[A-Za-z0-9]{5}){3}$/;

const login = (url: string, email: string, password: string) => request(`${url}/api/v1/auth/login`, 'POST', { email, password });

async function stop(server: Awaited<ReturnType<typeof spawnServer>>): Promise<void> {
  server.child.kill('SIGTERM');
  await new Promise((r) => server.child.once('exit', r));
}

describe('weft setup, users create, users reset-password', () => {
  it('gives the admin (WEFT_ADMIN_EMAIL) a one-time password once, and manages users\' passwords', async () => {
    const where = await freshDatabase();
    // On PostgreSQL the CLI writes to the database itself, and the server learns of it within WEFT_KEY_CACHE_MS
    // (its cached session lookups); 0 here, so the reset below bites at once in either mode.
    const env = { WEFT_DATA_DIR: where.dataDir, DATABASE_URL: where.databaseUrl, WEFT_ADMIN_EMAIL: 'owner@example.com', WEFT_KEY_CACHE_MS: '0' };
    const json = async (args: string[], code = 0) => {
      const r = await runCli([...args, '--json'], env);
      expect(r.code, r.stderr).toBe(code);
      return JSON.parse(r.stdout);
    };

    const setup = await json(['setup']);
    expect(setup.adminEmail).toBe('owner@example.com');
    expect(setup.adminPassword).toMatch(ONE_TIME);
    expect((await json(['setup'])).adminPassword).toBeUndefined();

    const server = await spawnServer(env, await freePort());
    try {
      // The server prints no password: setup gave it already.
      expect(server.output()).not.toMatch(/One-time password/);
      const first = await login(server.url, 'owner@example.com', setup.adminPassword);
      expect(first.status).toBe(200);
      expect(first.body.mustChangePassword).toBe(true);
      expect(first.body.user.id).toBe(setup.userId);

      // A chosen password is the user's own; a generated one is printed once and must be changed.
      const chosen = await json(['users', 'create', '--email', 'dana@example.com', '--workspace', 'default', '--role', 'read', '--password', 'dana chose this']);
      expect(chosen).toEqual({ id: expect.any(String), email: 'dana@example.com' });
      const dana = await login(server.url, 'dana@example.com', 'dana chose this');
      expect(dana.status).toBe(200);
      expect(dana.body.mustChangePassword).toBe(false);
      const cookie = (dana.headers.get('set-cookie') ?? '').split(';')[0]!;
      const session = await request(`${server.url}/api/v1/auth/session`, 'GET', undefined, { cookie });
      expect(session.body.workspaces).toEqual([{ id: setup.workspaceId, name: 'default', role: 'read' }]);

      const generated = await json(['users', 'create', '--email', 'eli@example.com']);
      expect(generated.password).toMatch(ONE_TIME);
      expect((await login(server.url, 'eli@example.com', generated.password)).body.mustChangePassword).toBe(true);

      expect((await json(['users', 'create', '--email', 'fay@example.com', '--password', 'short'], 1)).error).toMatch(/at least 12 characters/);
      expect((await json(['users', 'create', '--email', 'not-an-email'], 1)).error).toMatch(/email/);

      // Reset: a new one-time password, the old one and every session of the user end at once.
      const reset = await json(['users', 'reset-password', '--email', 'DANA@example.com']);
      expect(reset).toEqual({ id: chosen.id, email: 'DANA@example.com', password: expect.stringMatching(ONE_TIME), mustChangePassword: true });
      expect((await request(`${server.url}/api/v1/auth/session`, 'GET', undefined, { cookie })).status).toBe(401);
      expect((await login(server.url, 'dana@example.com', 'dana chose this')).status).toBe(401);
      const again = await login(server.url, 'dana@example.com', reset.password);
      expect(again.status).toBe(200);
      expect(again.body.mustChangePassword).toBe(true);

      expect((await json(['users', 'reset-password', '--email', 'nobody@example.com'], 1)).error).toMatch(/No user with the email/);
    } finally {
      await stop(server);
    }
  }, 300_000);

  it('prints the admin\'s email and one-time password beside the key on the very first start, and never again', async () => {
    const where = await freshDatabase();
    const env = { WEFT_DATA_DIR: where.dataDir, DATABASE_URL: where.databaseUrl };
    const server = await spawnServer(env, await freePort());
    let password: string;
    try {
      const out = server.output();
      expect(out).toMatch(/Workspace API key:\s+sk-weft-/);
      expect(out).toMatch(/Dashboard sign-in:\s+admin@localhost/);
      password = /One-time password:\s+(\S+)/.exec(out)![1]!;
      expect(password).toMatch(ONE_TIME);
      const r = await login(server.url, 'admin@localhost', password);
      expect(r.status).toBe(200);
      expect(r.body.mustChangePassword).toBe(true);
    } finally {
      await stop(server);
    }
    const second = await spawnServer(env, await freePort());
    try {
      expect(second.output()).not.toMatch(/One-time password|Workspace API key/);
      expect((await login(second.url, 'admin@localhost', password)).status).toBe(200);
    } finally {
      await stop(second);
    }
  }, 180_000);
});
