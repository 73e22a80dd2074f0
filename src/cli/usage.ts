import type { Command } from 'commander';
import { emit } from './output.js';
import { withSession } from './session.js';

/** `weft usage reconcile`: the running usage totals checked against (and rebuilt from) the usage events. */
export function registerUsageCommands(program: Command): void {
  const usage = program.command('usage').description('Usage accounting (cost per billed account and billing period)');

  usage
    .command('reconcile')
    .description('Rebuild the usage totals of every account and period from the usage events, and report the totals that differed')
    .option('--dry-run', 'only report the differences; change nothing')
    .option('--json', 'machine-readable output')
    .action(async (o: { dryRun?: boolean; json?: boolean }) => {
      const json = Boolean(o.json);
      const out = await withSession(json, ['usage.reconcile'], (s) => s.call('usage.reconcile', { dryRun: Boolean(o.dryRun) }));
      emit(json, out, () => [
        `${out.checked} totals checked; ${out.differences.length === 0 ? 'all agree with the usage events' : `${out.differences.length} differed${out.fixed ? ' and were rebuilt' : ' (dry run: nothing changed)'}`}`,
        ...out.differences.map((d) => `  ${d.account}  ${d.period}  total $${d.totalUsd.toFixed(9)}  events $${d.eventsUsd.toFixed(9)}`),
      ].join('\n'));
    });
}
