import fs from 'node:fs';
import path from 'node:path';
import type { Command } from 'commander';
import type { CoreServices } from '../compose.js';
import type { AppContext } from '../context.js';
import { HttpError } from '../http/errors.js';
import { publicWorkflow } from '../workflows/service.js';
import { emit, fail } from './output.js';

/** Runs a command body against the services of a freshly opened database. */
export type WithServices = <T>(json: boolean, fn: (services: CoreServices, ctx: AppContext) => Promise<T>) => Promise<T>;

/** `weft workflows deploy|list`. */
export function registerWorkflowCommands(program: Command, withServices: WithServices): void {
  const workflows = program.command('workflows').description('Manage workflows');

  workflows
    .command('deploy')
    .description('Create or update the workflow of that name from a JSON definition and deploy it')
    .argument('<file>', 'definition JSON file')
    .requiredOption('--workspace <idOrName>')
    .option('--name <name>', 'workflow name (default: the definition\'s name, else the file name)')
    .option('--json', 'machine-readable output')
    .action(async (file: string, o: { workspace: string; name?: string; json?: boolean }) => {
      const json = Boolean(o.json);
      let definition: Record<string, unknown>;
      try {
        definition = JSON.parse(fs.readFileSync(file, 'utf8')) as Record<string, unknown>;
      } catch (err) {
        return fail(`Cannot read ${file}: ${(err as Error).message}`, json);
      }
      const name = o.name ?? (typeof definition.name === 'string' ? definition.name : path.basename(file, path.extname(file)));
      const description = typeof definition.description === 'string' ? definition.description : undefined;
      await withServices(json, async ({ accounts, workflows }) => {
        const ws = await accounts.resolveWorkspace(o.workspace);
        if (!ws) return fail(`No workspace with id or name "${o.workspace}"`, json);
        const boot = await accounts.ensureBootstrap();
        const actor = { userId: boot.userId, type: 'cli' as const };
        try {
          const existing = await workflows.findByName(ws.id, name);
          const w = existing
            ? await workflows.updateWorkflow(ws.id, existing.id, { name, description, definition }, actor)
            : await workflows.createWorkflow(ws.id, { name, description, definition }, actor);
          const deployed = publicWorkflow(await workflows.deployWorkflow(ws.id, w.id, actor));
          emit(json, { workflowId: deployed.id, version: deployed.version }, () =>
            `Deployed "${deployed.name}" (${deployed.id}) as version ${deployed.version}`);
        } catch (err) {
          if (err instanceof HttpError) {
            const details = Array.isArray(err.extra.details) ? err.extra.details.map((d) => `  - ${(d as { message: string }).message}`).join('\n') : '';
            return fail(details ? `${err.message}\n${details}` : err.message, json);
          }
          throw err;
        }
      });
    });

  workflows
    .command('list')
    .requiredOption('--workspace <idOrName>')
    .option('--json', 'machine-readable output')
    .action(async (o: { workspace: string; json?: boolean }) => {
      const json = Boolean(o.json);
      await withServices(json, async ({ accounts, workflows, webhookRegistry }, ctx) => {
        const ws = await accounts.resolveWorkspace(o.workspace);
        if (!ws) return fail(`No workspace with id or name "${o.workspace}"`, json);
        const rows = await workflows.list(ws.id, 10_000);
        // Trigger URLs on WEFT_BASE_URL, else the address a local server listens on.
        const urls = await webhookRegistry.urls(rows.filter((r) => r.active_version_id !== null).map((r) => r.id), `http://localhost:${ctx.config.port}`);
        const list = rows.map((r) => {
          const { definition: _d, ...rest } = publicWorkflow(r);
          const webhookUrl = urls.get(r.id);
          return webhookUrl ? { ...rest, webhookUrl } : rest;
        });
        emit(json, list, () => list.map((w) => `${w.id}  ${w.name}  ${w.isDeployed ? `v${w.version}` : 'not deployed'}${'webhookUrl' in w ? `  ${w.webhookUrl}` : ''}`).join('\n') || 'No workflows.');
      });
    });
}
