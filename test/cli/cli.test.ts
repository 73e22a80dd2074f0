import { describe, expect, it } from 'vitest';
import { freshDatabase, request } from '../support/harness.js';
import { freePort, runCli, spawnServer } from '../support/cli.js';

describe('CLI', () => {
  it('sets up, manages workspaces and keys with --json output, and the keys work against the server', async () => {
    const where = await freshDatabase();
    const env = { WEFT_DATA_DIR: where.dataDir, DATABASE_URL: where.databaseUrl };
    const json = async (args: string[]) => {
      const r = await runCli([...args, '--json'], env);
      expect(r.code, r.stderr).toBe(0);
      return JSON.parse(r.stdout); // stdout holds only the JSON document
    };

    const first = await json(['setup']);
    expect(first).toEqual({
      userId: expect.any(String), workspaceId: expect.any(String), apiKey: expect.stringMatching(/^sk-weft-[0-9A-Za-z]{32}$/), keyId: expect.any(String),
      // The admin it created, with a one-time password for the dashboard (shown by this setup only).
      adminEmail: 'admin@localhost', adminPassword: expect.stringMatching(/^[A-Za-z0-9]{5}(-[A-Za-z0-9]{5}){3}$/),
    });
    const second = await json(['setup']);
    expect(second.adminPassword).toBeUndefined();
    expect(second.workspaceId).toBe(first.workspaceId);
    expect(second.userId).toBe(first.userId);
    expect(second.apiKey).not.toBe(first.apiKey);

    // Without a server: each command opens the database itself.
    const team = await json(['workspaces', 'create', '--name', 'team']);
    expect(team.name).toBe('team');
    const dupe = await runCli(['workspaces', 'create', '--name', 'team', '--json'], env);
    expect(dupe.code).toBe(1);
    expect(JSON.parse(dupe.stdout).error).toMatch(/already exists/);
    const key = await json(['keys', 'create', '--workspace', 'team', '--name', 'ci']);
    expect(key).toEqual({ id: expect.any(String), key: expect.stringMatching(/^sk-weft-/), type: 'workspace', workspaceId: team.id });
    const personal = await json(['keys', 'create', '--workspace', 'default', '--personal', '--user', first.userId]);
    expect(personal.type).toBe('personal');
    expect((await json(['migrate'])).applied).toEqual([]);

    const server = await spawnServer(env, await freePort());
    try {
      // While the server runs: through its admin socket (embedded), or on PostgreSQL directly.
      const list = await json(['workspaces', 'list']);
      expect(list.map((w: { name: string }) => w.name).sort()).toEqual(['default', 'team']);
      const keys = await json(['keys', 'list', '--workspace', 'team']);
      expect(keys.some((k: { id: string }) => k.id === key.id)).toBe(true);
      expect(JSON.stringify(keys)).not.toContain(key.key);
      const revoked = await json(['keys', 'revoke', personal.id]);
      expect(revoked).toEqual({ id: personal.id, revoked: true });

      const ok = await request(`${server.url}/api/v1/keys?workspaceId=${team.id}`, 'GET', undefined, { 'x-api-key': key.key });
      expect(ok.status).toBe(200);
      const gone = await request(`${server.url}/api/v1/keys?workspaceId=${first.workspaceId}`, 'GET', undefined, { 'x-api-key': personal.key });
      expect(gone.status).toBe(401);
      const wrong = await request(`${server.url}/api/v1/keys?workspaceId=${first.workspaceId}`, 'GET', undefined, { 'x-api-key': key.key });
      expect(wrong.status).toBe(403);
    } finally {
      server.child.kill('SIGTERM');
      const code = await new Promise((r) => server.child.once('exit', r));
      expect(code).toBe(0); // graceful shutdown
    }
  }, 300_000);

  it('prints the bootstrap key once on the very first start', async () => {
    const where = await freshDatabase();
    const env = { WEFT_DATA_DIR: where.dataDir, DATABASE_URL: where.databaseUrl };
    const server = await spawnServer(env, await freePort());
    try {
      const banner = /Workspace API key:\s+(sk-weft-[0-9A-Za-z]{32})/.exec(server.output());
      expect(banner).not.toBeNull();
      const ws = /Workspace id:\s+(\S+)/.exec(server.output())![1];
      const r = await request(`${server.url}/api/v1/keys?workspaceId=${ws}`, 'GET', undefined, { 'x-api-key': banner![1] });
      expect(r.status).toBe(200);
    } finally {
      server.child.kill('SIGTERM');
      await new Promise((r) => server.child.once('exit', r));
    }
    const again = await spawnServer(env, await freePort());
    try {
      expect(again.output()).not.toMatch(/Workspace API key/);
    } finally {
      again.child.kill('SIGTERM');
      await new Promise((r) => again.child.once('exit', r));
    }
  }, 120_000);
});
