#!/usr/bin/env node
import { Command } from 'commander';
import { loadConfig, type Config } from './config.js';
import type { Database } from './db/database.js';
import { migrate } from './db/migrate.js';
import { createLogger, openDatabase } from './runtime.js';
import { startServer } from './server.js';
import * as accounts from './accounts/service.js';
import * as accountStore from './accounts/store.js';
import { emit, fail } from './cli/output.js';
import { registerWorkflowCommands } from './cli/workflows.js';
import { registerCreditCommands } from './cli/credits.js';
import { newId } from './ids.js';
import { applyPlanToTables } from './tables/service.js';

const program = new Command();
program.name('weft').description('Weft: self-hostable workflow automation service').showHelpAfterError();

/** Runs a command body against the database; the embedded database must not be open elsewhere. */
export async function withDatabase<T>(json: boolean, fn: (db: Database, config: Config) => Promise<T>): Promise<T> {
  let config: Config;
  try {
    config = loadConfig();
  } catch (err) {
    return fail((err as Error).message, json);
  }
  let opened: Awaited<ReturnType<typeof openDatabase>> | undefined;
  try {
    opened = await openDatabase(config);
    return await fn(opened.db, config);
  } catch (err) {
    return fail((err as Error).message, json);
  } finally {
    await opened?.release();
  }
}

async function requireWorkspace(db: Database, ref: string, json: boolean) {
  const ws = await accounts.resolveWorkspace(db, ref);
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
  else log.info({ url: server.url, database: server.ctx.db.mode, role }, `Weft listening on ${server.url} (API reference: ${server.url}/api/docs)`);
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
    await withDatabase(Boolean(o.json), async (db) => {
      const applied = await migrate(db); // openDatabase already migrated; this reports none pending then
      emit(Boolean(o.json), { applied, database: db.mode }, () => `Database (${db.mode}) is up to date.`);
    });
  });

program
  .command('setup')
  .description('Ensure the database, the admin user and the "default" workspace; print a new workspace key')
  .option('--json', 'machine-readable output')
  .action(async (o: { json?: boolean }) => {
    await withDatabase(Boolean(o.json), async (db, config) => {
      const boot = await accounts.ensureBootstrap(db, config.defaultPlan);
      const { key, secret } = await accounts.createKey(db, { workspaceId: boot.workspaceId, userId: boot.userId, type: 'workspace', name: 'Setup key' });
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
    await withDatabase(json, async (db, config) => {
      const user = await accountStore.insertUser(db, { id: newId(), email: o.email, name: o.name ?? o.email, isAdmin: false, plan: config.defaultPlan })
        .catch((err: unknown) => fail((err as { code?: string }).code === '23505' ? `A user with email ${o.email} exists` : String(err), json));
      if (o.workspace) {
        const ws = await requireWorkspace(db, o.workspace, json);
        await accounts.addMember(db, ws.id, user.id, o.role as accounts.Role);
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
    await withDatabase(Boolean(o.json), async (db, config) => {
      const boot = await accounts.ensureBootstrap(db, config.defaultPlan);
      const ws = await accounts.createWorkspace(db, o.name, boot.userId, config.defaultPlan);
      emit(Boolean(o.json), { id: ws.id, name: ws.name }, () => `Workspace "${ws.name}" ${ws.id}`);
    });
  });
workspaces
  .command('list')
  .option('--json', 'machine-readable output')
  .action(async (o: { json?: boolean }) => {
    await withDatabase(Boolean(o.json), async (db) => {
      const rows = await accountStore.listWorkspaces(db);
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
    await withDatabase(json, async (db) => {
      const ws = await requireWorkspace(db, ref, json);
      const updated = await accountStore.setWorkspacePlan(db, ws.id, plan);
      await applyPlanToTables(db, ws.id, plan);
      emit(json, { id: updated.id, plan: updated.plan }, () => `Workspace "${updated.name}" is on plan ${updated.plan}`);
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
    await withDatabase(json, async (db, config) => {
      const ws = await requireWorkspace(db, o.workspace, json);
      const boot = await accounts.ensureBootstrap(db, config.defaultPlan);
      const userId = o.user ?? boot.userId;
      const type = o.personal ? 'personal' : 'workspace';
      if (o.personal && !(await accountStore.findRole(db, ws.id, userId))) {
        fail(`User ${userId} is not a member of workspace "${ws.name}"`, json);
      }
      const { key, secret } = await accounts.createKey(db, { workspaceId: ws.id, userId, type, name: o.name });
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
    await withDatabase(json, async (db) => {
      const rows = o.workspace
        ? await accountStore.listKeysForWorkspace(db, (await requireWorkspace(db, o.workspace, json)).id)
        : await accountStore.listAllKeys(db);
      const list = rows.map(accounts.publicKey);
      emit(json, list, () => list.map((k) => `${k.id}  ${k.type.padEnd(9)}  ${k.displayKey}  ${k.name}`).join('\n') || 'No keys.');
    });
  });
keys
  .command('revoke')
  .argument('<id>')
  .option('--json', 'machine-readable output')
  .action(async (id: string, o: { json?: boolean }) => {
    const json = Boolean(o.json);
    await withDatabase(json, async (db) => {
      const key = await accountStore.findKey(db, id).catch(() => undefined);
      if (!key || key.revoked_at) fail(`No active key with id ${id}`, json);
      const home = key.workspace_id
        ?? (await db.query<{ workspace_id: string }>('SELECT workspace_id FROM memberships WHERE user_id = $1 ORDER BY created_at LIMIT 1', [key.user_id]))[0]?.workspace_id;
      if (home) await accounts.revokeKey(db, key.id, home);
      else await accountStore.revokeKey(db, key.id);
      emit(json, { id: key.id, revoked: true }, () => `Revoked key ${key.id}`);
    });
  });

registerWorkflowCommands(program, withDatabase);
registerCreditCommands(program, withDatabase);

program.parseAsync(process.argv).catch((err: unknown) => {
  process.stderr.write(`weft: ${(err as Error).message}\n`);
  process.exit(1);
});
