import fs from 'node:fs';
import path from 'node:path';
import type { Command } from 'commander';
import type { ResultOf } from '../admin/operations.js';
import { emit, fail } from './output.js';
import { withSession } from './session.js';

/** How often `weft workflows run --async` asks how its run stands. */
const FOLLOW_INTERVAL_MS = 200;

/** `--input '{...}'`, or `--input @file.json`: a JSON object. */
function parseInput(text: string | undefined, json: boolean): Record<string, unknown> {
  if (text === undefined) return {};
  let value: unknown;
  try {
    value = JSON.parse(text.startsWith('@') ? fs.readFileSync(text.slice(1), 'utf8') : text);
  } catch (err) {
    return fail(`--input must be a JSON object (or @file.json): ${(err as Error).message}`, json);
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return fail('--input must be a JSON object', json);
  return value as Record<string, unknown>;
}

type RunOutcome = Omit<ResultOf<'runs.status'>, 'done'>;

/** Prints a run's outcome; a run that did not complete exits with 1 (its document carries `error`). */
function report(json: boolean, run: RunOutcome): void {
  const ok = run.status === 'completed' || run.status === 'paused';
  const doc = { executionId: run.executionId, workflowId: run.workflowId, status: run.status, output: run.output ?? null,
    ...(ok ? {} : { error: run.error ?? `Run ${run.status}` }) };
  emit(json, doc, () => {
    if (run.status === 'completed') return JSON.stringify(run.output ?? null, null, 2);
    if (run.status === 'paused') return `Run ${run.executionId} is paused, waiting for a person:\n${JSON.stringify(run.output ?? null, null, 2)}`;
    return `Run ${run.executionId} ${run.status}: ${doc.error}`;
  });
  if (!ok) process.exitCode = 1;
}

/** `weft workflows deploy|list|run`. */
export function registerWorkflowCommands(program: Command): void {
  const workflows = program.command('workflows').description('Manage and run workflows');

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
      if (typeof definition !== 'object' || definition === null || Array.isArray(definition)) return fail(`${file} does not hold a JSON object`, json);
      const name = o.name ?? (typeof definition.name === 'string' ? definition.name : path.basename(file, path.extname(file)));
      const description = typeof definition.description === 'string' ? definition.description : undefined;
      const d = await withSession(json, ['workflows.deploy'], (s) => s.call('workflows.deploy', { workspace: o.workspace, name, description, definition }));
      emit(json, { workflowId: d.workflowId, version: d.version }, () => `Deployed "${d.name}" (${d.workflowId}) as version ${d.version}`);
    });

  workflows
    .command('list')
    .requiredOption('--workspace <idOrName>')
    .option('--json', 'machine-readable output')
    .action(async (o: { workspace: string; json?: boolean }) => {
      const json = Boolean(o.json);
      const list = await withSession(json, ['workflows.list'], (s) => s.call('workflows.list', { workspace: o.workspace }));
      emit(json, list, () => list.map((w) => `${w.id}  ${w.name}  ${w.isDeployed ? `v${w.version}` : 'not deployed'}${w.webhookUrl ? `  ${w.webhookUrl}` : ''}`).join('\n') || 'No workflows.');
    });

  workflows
    .command('run')
    .description('Run the deployed version of a workflow and print its output (billed to its workspace)')
    .argument('<workflow>', 'workflow id (or its name, with --workspace)')
    .option('--workspace <idOrName>', 'the workflow\'s workspace (needed to name it by name)')
    .option('--input <json>', 'the run\'s input: a JSON object, or @file.json', undefined)
    .option('--async', 'queue it as an async job and follow the job until it ends')
    .option('--json', 'machine-readable output')
    .action(async (ref: string, o: { workspace?: string; input?: string; async?: boolean; json?: boolean }) => {
      const json = Boolean(o.json);
      const input = parseInput(o.input, json);
      const outcome = await withSession(json, ['workflows.run', 'runs.status'], async (s) => {
        const started = await s.call('workflows.run', { workflow: ref, workspace: o.workspace, input, async: Boolean(o.async) });
        if (!o.async) return started;
        if (!json) process.stderr.write(`Queued run ${started.executionId}; following it...\n`);
        let last = '';
        for (;;) {
          const now = await s.call('runs.status', { workspaceId: started.workspaceId, workflowId: started.workflowId, executionId: started.executionId });
          if (!json && now.status !== last) process.stderr.write(`  ${now.status}\n`);
          last = now.status;
          if (now.done) return now;
          await new Promise((r) => setTimeout(r, FOLLOW_INTERVAL_MS));
        }
      });
      report(json, outcome);
    });
}
