import { describe, expect, it } from 'vitest';
import { freshDatabase } from '../support/harness.js';
import { runCli } from '../support/cli.js';

describe('weft credits', () => {
  it('grants and shows credits of a workspace and of a user, with --json', async () => {
    const where = await freshDatabase();
    const env = { WEFT_DATA_DIR: where.dataDir, DATABASE_URL: where.databaseUrl };
    const json = async (args: string[], code = 0) => {
      const r = await runCli([...args, '--json'], env);
      expect(r.code, r.stderr).toBe(code);
      return JSON.parse(r.stdout);
    };
    const setup = await json(['setup']);

    const granted = await json(['credits', 'grant', '--workspace', 'default', '--usd', '12.5']);
    expect(granted).toEqual({ account: `workspace:${setup.workspaceId}`, grantedUsd: 12.5, balanceUsd: 12.5, reservedUsd: 0 });
    const more = await json(['credits', 'grant', '--workspace', setup.workspaceId, '--usd', '-2.25', '--note', 'refund']);
    expect(more.balanceUsd).toBe(10.25);

    const shown = await json(['credits', 'show', '--workspace', 'default']);
    expect(shown).toMatchObject({ account: `workspace:${setup.workspaceId}`, balanceUsd: 10.25, reservedUsd: 0 });
    expect(shown.ledger.map((e: { kind: string; amountUsd: number }) => [e.kind, e.amountUsd])).toEqual([['grant', -2.25], ['grant', 12.5]]);
    expect(shown.ledger[0].note).toBe('refund');

    const user = await json(['credits', 'grant', '--user', setup.userId, '--usd', '3']);
    expect(user).toMatchObject({ account: `user:${setup.userId}`, balanceUsd: 3 });

    expect((await json(['credits', 'grant', '--workspace', 'nope', '--usd', '1'], 1)).error).toMatch(/No workspace/);
    expect((await json(['credits', 'grant', '--workspace', 'default', '--usd', 'lots'], 1)).error).toMatch(/--usd/);
    expect((await json(['credits', 'grant', '--workspace', 'default', '--usd', '0'], 1)).error).toMatch(/--usd/);
    expect((await json(['credits', 'show'], 1)).error).toMatch(/exactly one/);
    const human = await runCli(['credits', 'show', '--workspace', 'default'], env);
    expect(human.stdout).toMatch(/balance \$10\.250000/);
  }, 120_000);
});
