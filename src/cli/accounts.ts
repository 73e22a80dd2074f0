import type { Command } from 'commander';
import { emit, fail } from './output.js';
import { withSession } from './session.js';

/** `weft migrate`, `setup`, `users`, `workspaces`, `keys`: each parses its options and runs its operation. */
export function registerAccountCommands(program: Command): void {
  program
    .command('migrate')
    .description('Apply pending database migrations')
    .option('--json', 'machine-readable output')
    .action(async (o: { json?: boolean }) => {
      const json = Boolean(o.json);
      const out = await withSession(json, ['migrate'], (s) => s.call('migrate', {}));
      emit(json, out, () => `Database (${out.database}) is up to date.`);
    });

  program
    .command('setup')
    .description('Ensure the database, the admin user and the "default" workspace; print a new workspace key')
    .option('--json', 'machine-readable output')
    .action(async (o: { json?: boolean }) => {
      const json = Boolean(o.json);
      const out = await withSession(json, ['setup'], (s) => s.call('setup', {}));
      emit(json, out, () => [
        `Admin user ${out.userId}`,
        `Workspace "default" ${out.workspaceId}`,
        `Workspace API key (shown once): ${out.apiKey}`,
        ...(out.adminPassword ? [
          `Dashboard sign-in: ${out.adminEmail}`,
          `One-time password (shown once; the dashboard asks for a new one at the first sign-in): ${out.adminPassword}`,
        ] : []),
      ].join('\n'));
    });

  const users = program.command('users').description('Manage users');
  users
    .command('create')
    .description('Create a user who can sign in to the dashboard, optionally a member of a workspace')
    .requiredOption('--email <email>')
    .option('--name <name>')
    .option('--workspace <idOrName>', 'also add the user to this workspace')
    .option('--role <role>', 'role in that workspace: admin, write or read', 'write')
    .option('--password <password>', 'the password (12 to 200 characters); default: a generated one-time password, printed once')
    .option('--json', 'machine-readable output')
    .action(async (o: { email: string; name?: string; workspace?: string; role: string; password?: string; json?: boolean }) => {
      const json = Boolean(o.json);
      if (!['admin', 'write', 'read'].includes(o.role)) fail('--role must be admin, write or read', json);
      const out = await withSession(json, ['users.create'], (s) =>
        s.call('users.create', { email: o.email, name: o.name, workspace: o.workspace, role: o.role as 'write', password: o.password }));
      emit(json, { id: out.id, email: out.email, ...(out.password ? { password: out.password } : {}) }, () => [
        `User ${out.id} <${out.email}>${out.workspace ? `, ${out.workspace.role} in "${out.workspace.name}"` : ''}`,
        ...(out.password ? [`One-time password (shown once; the dashboard asks for a new one at the first sign-in): ${out.password}`] : []),
      ].join('\n'));
    });
  users
    .command('reset-password')
    .description("Give a user a new one-time password (printed once) and end the user's dashboard sessions")
    .requiredOption('--email <email>')
    .option('--json', 'machine-readable output')
    .action(async (o: { email: string; json?: boolean }) => {
      const json = Boolean(o.json);
      const out = await withSession(json, ['users.reset-password'], (s) => s.call('users.reset-password', { email: o.email }));
      emit(json, out, () =>
        `New one-time password for ${out.email} (shown once; the dashboard asks for a new one at the next sign-in): ${out.password}`);
    });

  const workspaces = program.command('workspaces').description('Manage workspaces');
  workspaces
    .command('create')
    .requiredOption('--name <name>')
    .option('--json', 'machine-readable output')
    .action(async (o: { name: string; json?: boolean }) => {
      const json = Boolean(o.json);
      const ws = await withSession(json, ['workspaces.create'], (s) => s.call('workspaces.create', { name: o.name }));
      emit(json, ws, () => `Workspace "${ws.name}" ${ws.id}`);
    });
  workspaces
    .command('list')
    .option('--json', 'machine-readable output')
    .action(async (o: { json?: boolean }) => {
      const json = Boolean(o.json);
      const list = await withSession(json, ['workspaces.list'], (s) => s.call('workspaces.list', {}));
      emit(json, list, () => list.map((w) => `${w.id}  ${w.name}  (${w.plan})`).join('\n') || 'No workspaces.');
    });
  workspaces
    .command('set-plan')
    .argument('<workspace>', 'workspace id or name')
    .argument('<plan>', 'free, pro, team or enterprise')
    .option('--json', 'machine-readable output')
    .action(async (ref: string, plan: string, o: { json?: boolean }) => {
      const json = Boolean(o.json);
      if (!['free', 'pro', 'team', 'enterprise'].includes(plan)) fail('plan must be free, pro, team or enterprise', json);
      const out = await withSession(json, ['workspaces.set-plan'], (s) => s.call('workspaces.set-plan', { workspace: ref, plan: plan as 'free' }));
      emit(json, { id: out.id, plan: out.plan }, () => `Workspace "${out.name}" is on plan ${out.plan}`);
    });

  workspaces
    .command('remove-member')
    .argument('<workspace>', 'workspace id or name')
    .requiredOption('--email <email>', 'the member to remove')
    .option('--json', 'machine-readable output')
    .action(async (ref: string, o: { email: string; json?: boolean }) => {
      const json = Boolean(o.json);
      const out = await withSession(json, ['workspaces.remove-member'], (s) => s.call('workspaces.remove-member', { workspace: ref, email: o.email }));
      emit(json, out, () => `${out.email} is no longer a member of "${out.workspace}": their keys and sessions, and the workspace keys they created, no longer reach it`);
    });

  const keys = program.command('keys').description('Manage API keys');
  keys
    .command('create')
    .requiredOption('--workspace <idOrName>')
    .option('--personal', 'a personal key of --user (default: a workspace key)')
    .option('--user <id>', 'owner of a personal key (default: the admin user)')
    .option('--name <name>')
    .option('--json', 'machine-readable output')
    .action(async (o: { workspace: string; personal?: boolean; user?: string; name?: string; json?: boolean }) => {
      const json = Boolean(o.json);
      const k = await withSession(json, ['keys.create'], (s) =>
        s.call('keys.create', { workspace: o.workspace, personal: Boolean(o.personal), user: o.user, name: o.name }));
      emit(json, { id: k.id, key: k.key, type: k.type, workspaceId: k.workspaceId }, () =>
        `Created ${k.type} key ${k.id} in "${k.workspaceName}".\nSecret (shown once): ${k.key}`);
    });
  keys
    .command('list')
    .option('--workspace <idOrName>')
    .option('--json', 'machine-readable output')
    .action(async (o: { workspace?: string; json?: boolean }) => {
      const json = Boolean(o.json);
      const list = await withSession(json, ['keys.list'], (s) => s.call('keys.list', { workspace: o.workspace }));
      emit(json, list, () => list.map((k) => `${k.id}  ${k.type.padEnd(9)}  ${k.displayKey}  ${k.name}`).join('\n') || 'No keys.');
    });
  keys
    .command('revoke')
    .argument('<id>')
    .option('--json', 'machine-readable output')
    .action(async (id: string, o: { json?: boolean }) => {
      const json = Boolean(o.json);
      const out = await withSession(json, ['keys.revoke'], (s) => s.call('keys.revoke', { id }));
      emit(json, out, () => `Revoked key ${out.id}`);
    });
}
