#!/usr/bin/env node
import { Command } from 'commander';
import { loadConfig, type Config } from './config.js';
import { migrate } from './db/migrate.js';
import { createLogger, openDatabase } from './runtime.js';
import { startServer } from './server.js';
import { startBanner } from './start-banner.js';
import { publicKey, type Role } from './accounts/service.js';
import { emit, fail } from './cli/output.js';
import { registerWorkflowCommands } from './cli/workflows.js';
import { registerCreditCommands } from './cli/credits.js';
import { composeCore, type CoreServices } from './compose.js';
import type { AppContext } from './context.js';

const program = new Command();
program.name('weft').description('Weft: self-hostable workflow automation service').showHelpAfterError();

/** Runs a command body against the services; the embedded database must not be open elsewhere. */
export async function withServices<T>(json: boolean, fn: (services: CoreServices, ctx: AppContext) => Promise<T>): Promise<T> {
  let config: Config;
  try {
    config = loadConfig();
  } catch (err) {
    return fail((err as Error).message, json);
  }
  let opened: Awaited<ReturnType<typeof openDatabase>> | undefined;
  const onClose: (() => Promise<void>)[] = [];
  try {
    opened = await openDatabase(config);
    const ctx: AppContext = { config, db: opened.db, log: createLogger(config), role: 'api', onClose };
    return await fn(composeCore(ctx), ctx);
  } catch (err) {
    return fail((err as Error).message, json);
  } finally {
    for (const hook of onClose.reverse()) await hook().catch(() => undefined);
    await opened?.release();
  }
}

async function requireWorkspace(s: CoreServices, ref: string, json: boolean) {
  const ws = await s.accounts.resolveWorkspace(ref);
  if (!ws) fail(`No workspace with id or name "${ref}"`, json);
  return ws;
}

async function runServer(role: 'all' | 'api' | 'worker'): Promise<void> {
  const config = loadConfig();
  if (role !== 'all' && !config.databaseUrl) {
    throw new Error(`weft ${role} needs DATABASE_URL: the embedded database serves one process (use weft serve)`);
  }
  const server = await startServer(config, { announce: role === 'all', role });
  const log = createLogger(config);
  if (role === 'worker') log.info({ database: server.ctx.db.mode }, 'Weft worker running async jobs');
  else {
    log.info({ url: server.url, database: server.ctx.db.mode, role }, `Weft listening on ${server.url} (API reference: ${server.url}/api/docs)`);
    process.stdout.write(startBanner(server.url));
  }
  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    log.info({ signal }, 'shutting down: finishing in-flight requests');
    const force = setTimeout(() => process.exit(1), 30_000);
    force.unref();
    server.close().then(
      () => process.exit(0),
      (err: unknown) => {
        log.error({ err }, 'shutdown failed');
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
}

program
  .command('serve')
  .description('Serve the HTTP API and run async jobs (PORT, HOST, WEFT_DATA_DIR, DATABASE_URL, LOG_LEVEL from the environment)')
  .action(() => runServer('all'));

program
  .command('api')
  .description('Serve the HTTP API only; worker processes run async jobs (needs DATABASE_URL, and REDIS_URL for prompt dispatch)')
  .action(() => runServer('api'));

program
  .command('worker')
  .description('Run async jobs only, no HTTP (needs DATABASE_URL)')
  .action(() => runServer('worker'));

program
  .command('migrate')
  .description('Apply pending database migrations')
  .option('--json', 'machine-readable output')
  .action(async (o: { json?: boolean }) => {
    await withServices(Boolean(o.json), async (_s, { db }) => {
      const applied = await migrate(db); // openDatabase already migrated; this reports none pending then
      emit(Boolean(o.json), { applied, database: db.mode }, () => `Database (${db.mode}) is up to date.`);
    });
  });

program
  .command('setup')
  .description('Ensure the database, the admin user and the "default" workspace; print a new workspace key')
  .option('--json', 'machine-readable output')
  .action(async (o: { json?: boolean }) => {
    await withServices(Boolean(o.json), async ({ accounts }) => {
      const boot = await accounts.ensureBootstrap();
      const { key, secret } = await accounts.createKey({ workspaceId: boot.workspaceId, userId: boot.userId, type: 'workspace', name: 'Setup key' });
      emit(Boolean(o.json), { userId: boot.userId, workspaceId: boot.workspaceId, apiKey: secret, keyId: key.id }, () =>
        `Admin user ${boot.userId}\nWorkspace "default" ${boot.workspaceId}\nWorkspace API key (shown once): ${secret}`);
    });
  });

const users = program.command('users').description('Manage users');
users
  .command('create')
  .requiredOption('--email <email>')
  .option('--name <name>')
  .option('--workspace <idOrName>', 'also add the user to this workspace')
  .option('--role <role>', 'role in that workspace: admin, write or read', 'write')
  .option('--json', 'machine-readable output')
  .action(async (o: { email: string; name?: string; workspace?: string; role: string; json?: boolean }) => {
    const json = Boolean(o.json);
    if (!['admin', 'write', 'read'].includes(o.role)) fail('--role must be admin, write or read', json);
    await withServices(json, async (s) => {
      const user = await s.accounts.createUser({ email: o.email, name: o.name });
      if (o.workspace) {
        const ws = await requireWorkspace(s, o.workspace, json);
        await s.accounts.addMember(ws.id, user.id, o.role as Role);
      }
      emit(json, { id: user.id, email: user.email }, () => `User ${user.id} <${user.email}>`);
    });
  });

const workspaces = program.command('workspaces').description('Manage workspaces');
workspaces
  .command('create')
  .requiredOption('--name <name>')
  .option('--json', 'machine-readable output')
  .action(async (o: { name: string; json?: boolean }) => {
    await withServices(Boolean(o.json), async ({ accounts }) => {
      const boot = await accounts.ensureBootstrap();
      const ws = await accounts.createWorkspace(o.name, boot.userId);
      emit(Boolean(o.json), { id: ws.id, name: ws.name }, () => `Workspace "${ws.name}" ${ws.id}`);
    });
  });
workspaces
  .command('list')
  .option('--json', 'machine-readable output')
  .action(async (o: { json?: boolean }) => {
    await withServices(Boolean(o.json), async ({ accounts }) => {
      const rows = await accounts.listWorkspaces();
      const list = rows.map((w) => ({ id: w.id, name: w.name, plan: w.plan, allowPersonalKeys: w.allow_personal_keys, createdAt: w.created_at.toISOString() }));
      emit(Boolean(o.json), list, () => list.map((w) => `${w.id}  ${w.name}  (${w.plan})`).join('\n') || 'No workspaces.');
    });
  });
workspaces
  .command('set-plan')
  .argument('<workspace>', 'workspace id or name')
  .argument('<plan>', 'free, pro, team or enterprise')
  .option('--json', 'machine-readable output')
  .action(async (ref: string, plan: string, o: { json?: boolean }) => {
    const json = Boolean(o.json);
    if (!['free', 'pro', 'team', 'enterprise'].includes(plan)) fail('plan must be free, pro, team or enterprise', json);
    await withServices(json, async (s) => {
      const ws = await requireWorkspace(s, ref, json);
      await s.plans.setPlan(ws.id, plan);
      emit(json, { id: ws.id, plan }, () => `Workspace "${ws.name}" is on plan ${plan}`);
    });
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
    await withServices(json, async (s) => {
      const ws = await requireWorkspace(s, o.workspace, json);
      const boot = await s.accounts.ensureBootstrap();
      const userId = o.user ?? boot.userId;
      const type = o.personal ? 'personal' : 'workspace';
      if (o.personal && !(await s.accounts.roleOf(ws.id, userId))) {
        fail(`User ${userId} is not a member of workspace "${ws.name}"`, json);
      }
      const { key, secret } = await s.accounts.createKey({ workspaceId: ws.id, userId, type, name: o.name });
      emit(json, { id: key.id, key: secret, type: key.type, workspaceId: ws.id }, () =>
        `Created ${type} key ${key.id} in "${ws.name}".\nSecret (shown once): ${secret}`);
    });
  });
keys
  .command('list')
  .option('--workspace <idOrName>')
  .option('--json', 'machine-readable output')
  .action(async (o: { workspace?: string; json?: boolean }) => {
    const json = Boolean(o.json);
    await withServices(json, async (s) => {
      const rows = await s.accounts.listKeys(o.workspace ? (await requireWorkspace(s, o.workspace, json)).id : undefined);
      const list = rows.map(publicKey);
      emit(json, list, () => list.map((k) => `${k.id}  ${k.type.padEnd(9)}  ${k.displayKey}  ${k.name}`).join('\n') || 'No keys.');
    });
  });
keys
  .command('revoke')
  .argument('<id>')
  .option('--json', 'machine-readable output')
  .action(async (id: string, o: { json?: boolean }) => {
    const json = Boolean(o.json);
    await withServices(json, async ({ accounts }) => {
      const key = await accounts.findKey(id);
      if (!key || key.revoked_at) return fail(`No active key with id ${id}`, json);
      const home = key.workspace_id ?? (await accounts.homeWorkspaceOf(key.user_id));
      await accounts.revokeKey(key.id, home);
      emit(json, { id: key.id, revoked: true }, () => `Revoked key ${key.id}`);
    });
  });

registerWorkflowCommands(program, withServices);
registerCreditCommands(program, withServices);

program.parseAsync(process.argv).catch((err: unknown) => {
  process.stderr.write(`weft: ${(err as Error).message}\n`);
  process.exit(1);
});
