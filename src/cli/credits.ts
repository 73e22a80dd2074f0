import type { Command } from 'commander';
import type { AccountsService } from '../accounts/service.js';
import type { Database } from '../db/database.js';
import * as ledger from '../ai/credit-ledger.js';
import { emit, fail } from './output.js';
import type { WithServices } from './workflows.js';

interface Target { workspace?: string; user?: string }

/** The billed account a command is about: a workspace ('workspace:<id>') or a user's personal keys ('user:<id>'). */
async function accountOf(accounts: AccountsService, o: Target, json: boolean): Promise<string> {
  if (Boolean(o.workspace) === Boolean(o.user)) return fail('Give exactly one of --workspace <id|name> or --user <id>', json);
  if (o.workspace) {
    const ws = await accounts.resolveWorkspace(o.workspace);
    if (!ws) return fail(`No workspace with id or name "${o.workspace}"`, json);
    return `workspace:${ws.id}`;
  }
  const user = await accounts.findUser(o.user ?? '');
  if (!user) return fail(`No user with id "${o.user}"`, json);
  return `user:${user.id}`;
}

async function show(db: Database, account: string, entries: number) {
  const b = await ledger.getBalance(db, account);
  const rows = entries > 0 ? await ledger.listLedger(db, account, entries) : [];
  return {
    account,
    balanceUsd: ledger.roundUsd(b?.balanceNano ?? 0),
    reservedUsd: ledger.roundUsd(b?.reservedNano ?? 0),
    ledger: rows.map((r) => ({
      id: String(r.id), kind: r.kind, amountUsd: ledger.roundUsd(r.amount_nano), balanceAfterUsd: ledger.roundUsd(r.balance_after_nano),
      costUsd: r.cost_nano === null ? null : ledger.roundUsd(r.cost_nano), requestId: r.request_id, model: r.model, note: r.note,
      createdAt: r.created_at.toISOString(),
    })),
  };
}

/** `weft credits grant|show`: the AI gateway's credit balances. */
export function registerCreditCommands(program: Command, withServices: WithServices): void {
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
      await withServices(json, async ({ accounts }, { db }) => {
        const account = await accountOf(accounts, o, json);
        const after = await ledger.grant(db, account, ledger.usdToNano(usd), o.note ?? 'granted with the CLI');
        const b = await ledger.getBalance(db, account);
        const out = { account, grantedUsd: usd, balanceUsd: ledger.roundUsd(after), reservedUsd: ledger.roundUsd(b?.reservedNano ?? 0) };
        emit(json, out, () => `${usd >= 0 ? 'Granted' : 'Took'} $${Math.abs(usd)} ${usd >= 0 ? 'to' : 'from'} ${account}; balance $${ledger.formatUsd(after)}`);
      });
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
      await withServices(json, async ({ accounts }, { db }) => {
        const account = await accountOf(accounts, o, json);
        const out = await show(db, account, n);
        emit(json, out, () => [
          `${account}: balance $${out.balanceUsd.toFixed(6)}, reserved $${out.reservedUsd.toFixed(6)}`,
          ...out.ledger.map((e) => `  ${e.createdAt}  ${e.kind.padEnd(7)}  ${e.amountUsd >= 0 ? '+' : ''}${e.amountUsd.toFixed(6)}  -> ${e.balanceAfterUsd.toFixed(6)}${e.model ? `  ${e.model}` : ''}${e.note ? `  (${e.note})` : ''}`),
        ].join('\n'));
      });
    });
}
