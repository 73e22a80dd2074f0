import type { Command } from 'commander';
import { emit, fail } from './output.js';
import { withSession } from './session.js';

interface Target { workspace?: string; user?: string }

/** `weft credits grant|show`: the AI gateway's credit balances. */
export function registerCreditCommands(program: Command): void {
  const credits = program.command('credits').description('AI gateway credit balances (USD)');

  credits
    .command('grant')
    .description('Add credits to a billed account (a negative amount takes them away)')
    .option('--workspace <idOrName>', 'the workspace (billed for its workspace keys)')
    .option('--user <id>', 'a user (billed for their personal keys)')
    .requiredOption('--usd <amount>', 'amount in USD, e.g. 10 or 2.5')
    .option('--note <text>', 'recorded in the ledger')
    .option('--json', 'machine-readable output')
    .action(async (o: Target & { usd: string; note?: string; json?: boolean }) => {
      const json = Boolean(o.json);
      const usd = Number(o.usd);
      if (!/^-?\d+(\.\d+)?$/.test(o.usd.trim()) || !Number.isFinite(usd) || usd === 0 || Math.abs(usd) > 1_000_000) {
        fail('--usd must be a non-zero number of dollars, at most 1000000', json);
      }
      const out = await withSession(json, ['credits.grant'], (s) => s.call('credits.grant', { workspace: o.workspace, user: o.user, usd, note: o.note }));
      const { balance, ...doc } = out;
      emit(json, doc, () => `${usd >= 0 ? 'Granted' : 'Took'} $${Math.abs(usd)} ${usd >= 0 ? 'to' : 'from'} ${out.account}; balance $${balance}`);
    });

  credits
    .command('show')
    .description('Show the balance and the latest ledger entries of a billed account')
    .option('--workspace <idOrName>')
    .option('--user <id>')
    .option('--entries <n>', 'ledger entries to show', '10')
    .option('--json', 'machine-readable output')
    .action(async (o: Target & { entries: string; json?: boolean }) => {
      const json = Boolean(o.json);
      const n = Number(o.entries);
      if (!Number.isInteger(n) || n < 0 || n > 1000) fail('--entries must be an integer from 0 to 1000', json);
      const out = await withSession(json, ['credits.show'], (s) => s.call('credits.show', { workspace: o.workspace, user: o.user, entries: n }));
      emit(json, out, () => [
        `${out.account}: balance $${out.balanceUsd.toFixed(6)}, reserved $${out.reservedUsd.toFixed(6)}`,
        ...out.ledger.map((e) => `  ${e.createdAt}  ${e.kind.padEnd(7)}  ${e.amountUsd >= 0 ? '+' : ''}${e.amountUsd.toFixed(6)}  -> ${e.balanceAfterUsd.toFixed(6)}${e.model ? `  ${e.model}` : ''}${e.note ? `  (${e.note})` : ''}`),
      ].join('\n'));
    });
}
