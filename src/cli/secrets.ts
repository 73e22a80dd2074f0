import type { Command } from 'commander';
import { emit, fail } from './output.js';
import { withSession } from './session.js';

/**
 * The value of `weft secrets set`: standard input, whole, without one trailing line break (what `echo`
 * and a typed line end with). Never an argument, which would stay in shell history and `ps`.
 */
async function readValue(json: boolean): Promise<string> {
  if (process.stdin.isTTY) process.stderr.write('Type the value, then press Enter and Ctrl-D:\n');
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  const value = Buffer.concat(chunks).toString('utf8').replace(/\r?\n$/, '');
  if (value.length === 0) return fail('No value on standard input: pipe it in, e.g. printf %s "$TOKEN" | weft secrets set API_TOKEN --workspace default', json);
  return value;
}

/** `weft secrets set|list|delete|rotate-key`. */
export function registerSecretCommands(program: Command): void {
  const secrets = program.command('secrets').description('Workspace secrets, referenced as {{NAME}} in block fields (values are never shown)');

  secrets
    .command('set')
    .description('Create or replace a secret; the value is read from standard input')
    .argument('<name>', 'upper-case name, e.g. API_TOKEN')
    .requiredOption('--workspace <idOrName>')
    .option('--json', 'machine-readable output')
    .action(async (name: string, o: { workspace: string; json?: boolean }) => {
      const json = Boolean(o.json);
      const value = await readValue(json);
      const r = await withSession(json, ['secrets.set'], (s) => s.call('secrets.set', { workspace: o.workspace, name, value }));
      emit(json, r, () => `${r.created ? 'Created' : 'Replaced'} secret ${r.name}`);
    });

  secrets
    .command('list')
    .requiredOption('--workspace <idOrName>')
    .option('--json', 'machine-readable output')
    .action(async (o: { workspace: string; json?: boolean }) => {
      const json = Boolean(o.json);
      const list = await withSession(json, ['secrets.list'], (s) => s.call('secrets.list', { workspace: o.workspace }));
      emit(json, list, () => list.map((x) => `${x.name}  updated ${x.updatedAt}  last used ${x.lastUsedAt ?? 'never'}`).join('\n') || 'No secrets.');
    });

  secrets
    .command('delete')
    .argument('<name>')
    .requiredOption('--workspace <idOrName>')
    .option('--json', 'machine-readable output')
    .action(async (name: string, o: { workspace: string; json?: boolean }) => {
      const json = Boolean(o.json);
      const r = await withSession(json, ['secrets.delete'], (s) => s.call('secrets.delete', { workspace: o.workspace, name }));
      emit(json, r, () => `Deleted secret ${r.name}` + (r.usedBy.length
        ? `\nDeployed workflows that reference it (their runs now fail until it is set again): ${r.usedBy.map((w) => `${w.name} (${w.id})`).join(', ')}`
        : ''));
    });

  secrets
    .command('rotate-key')
    .description('Re-encrypt every secret in one transaction: under a new generated key (embedded key file), or under WEFT_ENCRYPTION_KEY ' +
      '(rows written under WEFT_ENCRYPTION_KEY_PREVIOUS are read with it)')
    .option('--json', 'machine-readable output')
    .action(async (o: { json?: boolean }) => {
      const json = Boolean(o.json);
      const r = await withSession(json, ['secrets.rotate-key'], (s) => s.call('secrets.rotate-key', {}));
      emit(json, r, () => `Re-encrypted ${r.rotated} secret(s) under key ${r.keyId}` +
        (r.keyFile ? ` (written to ${r.keyFile}: back it up now; the old key no longer decrypts anything)` : ''));
    });
}
