// `weft secrets set|list|delete|rotate-key` on both databases (in this process's absence: the CLI opens
// the database itself), then a server on the same database whose run resolves the secret.
import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { bootstrappedDatabase, startTestServer } from '../support/harness.js';
import { runCli } from '../support/cli.js';
import { deploy, fn, start } from '../support/workflows.js';

describe('weft secrets', () => {
  it('sets from standard input, lists without values, rotates the key, deletes; runs read what the CLI wrote', async () => {
    const boot = await bootstrappedDatabase();
    // Embedded: the key file of the data directory, as the test server below uses.
    const env = { ...boot.env, ...(boot.env.DATABASE_URL ? {} : { WEFT_ENCRYPTION_KEY: '' }) };
    const value = `cli-${randomBytes(10).toString('hex')}`;

    const set = await runCli(['secrets', 'set', 'CLI_TOKEN', '--workspace', 'default', '--json'], env, `${value}\n`);
    expect(set.code, set.stderr).toBe(0);
    expect(JSON.parse(set.stdout)).toMatchObject({ name: 'CLI_TOKEN', created: true });
    const empty = await runCli(['secrets', 'set', 'EMPTY', '--workspace', 'default'], env, '');
    expect(empty.code).toBe(1);
    expect(empty.stderr).toContain('No value on standard input');
    const badName = await runCli(['secrets', 'set', 'bad-name', '--workspace', 'default'], env, 'v');
    expect(badName.code).toBe(1);
    expect(badName.stderr).toContain('^[A-Z][A-Z0-9_]{0,63}$');
    expect((await runCli(['secrets', 'set', 'SPARE', '--workspace', 'default'], env, 'spare-value')).code).toBe(0);

    const list = await runCli(['secrets', 'list', '--workspace', 'default', '--json'], env);
    expect(JSON.parse(list.stdout).map((s: any) => s.name)).toEqual(['CLI_TOKEN', 'SPARE']);
    expect(list.stdout).not.toContain(value);

    const rotated = await runCli(['secrets', 'rotate-key', '--json'], env);
    expect(rotated.code, rotated.stderr).toBe(0);
    expect(JSON.parse(rotated.stdout).rotated).toBe(2);

    const deleted = await runCli(['secrets', 'delete', 'SPARE', '--workspace', 'default', '--json'], env);
    expect(JSON.parse(deleted.stdout)).toEqual({ name: 'SPARE', deleted: true, usedBy: [] });
    expect((await runCli(['secrets', 'delete', 'SPARE', '--workspace', 'default'], env)).code).toBe(1);

    const t = await startTestServer({ reuse: boot.where, env: boot.env.DATABASE_URL ? {} : { WEFT_ENCRYPTION_KEY: '' } });
    try {
      const id = await deploy(t, 'reads-cli-secret', { blocks: [start(), fn('f', 'return {{CLI_TOKEN}}.length')], edges: [{ from: 'start', to: 'f' }] });
      const run = await t.call('POST', `/api/workflows/${id}/execute`, {});
      expect(run.body.output).toBe(value.length);
      const audit = (await t.call('GET', `/api/v1/audit-logs?workspaceId=${t.workspaceId}`)).body.data.filter((e: any) => e.resourceType === 'secret');
      expect(audit.map((e: any) => `${e.action} ${e.resourceName} ${e.actorType}`)).toEqual(expect.arrayContaining(['secret.created CLI_TOKEN cli', 'secret.deleted SPARE cli']));
      expect(JSON.stringify(audit)).not.toContain(value);
    } finally {
      await t.close();
    }
    // Many CLI processes in a row: 72 s in CI on a slow day (2026-11-27); the bound leaves room for a slower one.
  }, 240_000);
});
