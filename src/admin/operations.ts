// The CLI's commands that touch the database, each implemented once. The CLI runs an operation either in
// its own process (on a database it opened) or, when a server holds the embedded data directory, inside
// that server through the admin channel (channel.ts): the same function either way. Results are plain
// JSON values (dates as ISO strings), since they may cross the socket.
import { z } from 'zod';
import { publicKey } from '../accounts/service.js';
import * as ledger from '../ai/credit-ledger.js';
import type { CoreServices, Services } from '../compose.js';
import type { AppContext } from '../context.js';
import { migrate } from '../db/migrate.js';
import { HttpError } from '../http/errors.js';
import { isUuid } from '../ids.js';
import { publicWorkflow, workflowSummary } from '../workflows/service.js';
import { generatePassword, MAX_PASSWORD_LENGTH, MIN_PASSWORD_LENGTH } from '../sessions/password.js';

/** A failure to report to the CLI's user as it is (no stack): a missing workspace, a refused run, ... */
export class CommandError extends Error {}

export interface OperationEnv {
  services: CoreServices & Partial<Pick<Services, 'runs'>>;
  ctx: AppContext;
  /** True inside the running server, whose workers take async jobs. */
  inServer: boolean;
  /** Aborted when the caller goes away (its socket closed). */
  signal: AbortSignal;
  /** Work the operation started that must end before the database closes (a job run by the CLI itself). */
  background(work: Promise<unknown>): void;
}

interface Operation<S extends z.ZodType, R> {
  args: S;
  /** Needs the run machinery (sandbox, queue): the CLI then composes every service. */
  runs?: boolean;
  run(env: OperationEnv, args: z.output<S>): Promise<R>;
}
type AnyOperation = Operation<z.ZodType, unknown>;
const op = <S extends z.ZodType, R>(o: Operation<S, R>): Operation<S, R> => o;

async function workspace(s: CoreServices, ref: string) {
  const ws = await s.accounts.resolveWorkspace(ref);
  if (!ws) throw new CommandError(`No workspace with id or name "${ref}"`);
  return ws;
}

/** The billed account a credit command is about: a workspace ('workspace:<id>') or a user ('user:<id>'). */
async function billedAccount(s: CoreServices, o: { workspace?: string; user?: string }): Promise<string> {
  if (Boolean(o.workspace) === Boolean(o.user)) throw new CommandError('Give exactly one of --workspace <id|name> or --user <id>');
  if (o.workspace) return `workspace:${(await workspace(s, o.workspace)).id}`;
  const user = await s.accounts.findUser(o.user ?? '');
  if (!user) throw new CommandError(`No user with id "${o.user}"`);
  return `user:${user.id}`;
}

function requireRuns(env: OperationEnv) {
  const { runs } = env.services;
  if (!runs) throw new Error('this operation needs the run service');
  return runs;
}

const ROLES = ['admin', 'write', 'read'] as const;
const EMAIL = /^[^\s@]+@[^\s@]+$/;
const PLANS = ['free', 'pro', 'team', 'enterprise'] as const;
const TERMINAL = new Set(['completed', 'failed', 'cancelled', 'paused']);
const creditTarget = { workspace: z.string().min(1).optional(), user: z.string().min(1).optional() };

export const operations = {
  migrate: op({
    args: z.object({}),
    async run({ ctx }) {
      const applied = await migrate(ctx.db); // opening the database migrated already: usually none pending
      return { applied, database: ctx.db.mode };
    },
  }),

  /**
   * Ensures the admin and the default workspace, and makes a workspace key. An admin without a password
   * (the one this created) gets a one-time password, returned with its email this once.
   */
  setup: op({
    args: z.object({}),
    async run({ services: { accounts, sessions } }) {
      const boot = await accounts.ensureBootstrap();
      const { key, secret } = await accounts.createKey({ workspaceId: boot.workspaceId, userId: boot.userId, type: 'workspace', name: 'Setup key' });
      const adminPassword = await sessions.claimInitialPassword(boot.userId);
      const admin = adminPassword ? await accounts.findUser(boot.userId) : undefined;
      return {
        userId: boot.userId, workspaceId: boot.workspaceId, apiKey: secret, keyId: key.id,
        ...(admin && adminPassword ? { adminEmail: admin.email, adminPassword } : {}),
      };
    },
  }),

  /** A user, optionally a member of a workspace, who can sign in to the dashboard: with `password`, or a generated one-time one. */
  'users.create': op({
    args: z.object({
      email: z.string().trim().regex(EMAIL, 'email must be an email address'), name: z.string().optional(), workspace: z.string().optional(),
      role: z.enum(ROLES, { message: '--role must be admin, write or read' }),
      password: z.string().min(MIN_PASSWORD_LENGTH, `--password must be at least ${MIN_PASSWORD_LENGTH} characters`)
        .max(MAX_PASSWORD_LENGTH, `--password must be at most ${MAX_PASSWORD_LENGTH} characters`).optional(),
    }),
    async run({ services: s }, a) {
      const ws = a.workspace ? await workspace(s, a.workspace) : undefined;
      const user = await s.accounts.createUser({ email: a.email, name: a.name });
      if (ws) await s.accounts.addMember(ws.id, user.id, a.role);
      // A generated password is a one-time one (mustChangePassword); a chosen one is the user's.
      const generated = a.password ? undefined : generatePassword();
      await s.sessions.setPassword(user.id, a.password ?? generated!, !a.password);
      return { id: user.id, email: user.email, workspace: ws ? { id: ws.id, name: ws.name, role: a.role } : undefined, ...(generated ? { password: generated } : {}) };
    },
  }),

  /** A new one-time password for a user (mustChangePassword); every session of the user ends. */
  'users.reset-password': op({
    args: z.object({ email: z.string().trim().min(1) }),
    async run({ services: { sessions } }, a) {
      const userId = await sessions.userIdByEmail(a.email);
      if (!userId) throw new CommandError(`No user with the email ${a.email}`);
      const password = await sessions.resetPassword(userId);
      if (!password) throw new CommandError(`No user with the email ${a.email}`);
      return { id: userId, email: a.email, password, mustChangePassword: true };
    },
  }),

  'workspaces.create': op({
    args: z.object({ name: z.string().min(1) }),
    async run({ services: { accounts } }, a) {
      const boot = await accounts.ensureBootstrap();
      const ws = await accounts.createWorkspace(a.name, boot.userId);
      return { id: ws.id, name: ws.name };
    },
  }),

  'workspaces.list': op({
    args: z.object({}),
    async run({ services: { accounts } }) {
      const rows = await accounts.listWorkspaces();
      return rows.map((w) => ({ id: w.id, name: w.name, plan: w.plan, allowPersonalKeys: w.allow_personal_keys, createdAt: w.created_at.toISOString() }));
    },
  }),

  'workspaces.set-plan': op({
    args: z.object({ workspace: z.string().min(1), plan: z.enum(PLANS, { message: 'plan must be free, pro, team or enterprise' }) }),
    async run({ services: s }, a) {
      const ws = await workspace(s, a.workspace);
      await s.plans.setPlan(ws.id, a.plan);
      return { id: ws.id, name: ws.name, plan: a.plan };
    },
  }),

  /** Takes a user (by email) out of a workspace: their keys and sessions, and the workspace keys they created, stop reaching it. */
  'workspaces.remove-member': op({
    args: z.object({ workspace: z.string().min(1), email: z.string().trim().min(1) }),
    async run({ services: s }, a) {
      const ws = await workspace(s, a.workspace);
      const userId = await s.sessions.userIdByEmail(a.email);
      if (!userId || !(await s.accounts.roleOf(ws.id, userId))) throw new CommandError(`${a.email} is not a member of workspace "${ws.name}"`);
      try {
        await s.accounts.removeMember(ws.id, userId);
      } catch (err) {
        if (err instanceof HttpError) throw new CommandError(err.message);
        throw err;
      }
      return { workspaceId: ws.id, workspace: ws.name, userId, email: a.email, removed: true };
    },
  }),

  'keys.create': op({
    args: z.object({ workspace: z.string().min(1), personal: z.boolean().default(false), user: z.string().optional(), name: z.string().optional() }),
    async run({ services: s }, a) {
      const ws = await workspace(s, a.workspace);
      const boot = await s.accounts.ensureBootstrap();
      const userId = a.user ?? boot.userId;
      const type = a.personal ? 'personal' : 'workspace';
      if (a.personal && !(await s.accounts.roleOf(ws.id, userId))) throw new CommandError(`User ${userId} is not a member of workspace "${ws.name}"`);
      const { key, secret } = await s.accounts.createKey({ workspaceId: ws.id, userId, type, name: a.name });
      return { id: key.id, key: secret, type: key.type, workspaceId: ws.id, workspaceName: ws.name };
    },
  }),

  'keys.list': op({
    args: z.object({ workspace: z.string().optional() }),
    async run({ services: s }, a) {
      const rows = await s.accounts.listKeys(a.workspace ? (await workspace(s, a.workspace)).id : undefined);
      return rows.map(publicKey).map((k) => JSON.parse(JSON.stringify(k)) as typeof k);
    },
  }),

  'keys.revoke': op({
    args: z.object({ id: z.string().min(1) }),
    async run({ services: { accounts } }, a) {
      const key = await accounts.findKey(a.id);
      if (!key || key.revoked_at) throw new CommandError(`No active key with id ${a.id}`);
      const home = key.workspace_id ?? (await accounts.homeWorkspaceOf(key.user_id));
      await accounts.revokeKey(key.id, home);
      return { id: key.id, revoked: true };
    },
  }),

  /** Creates or replaces a secret (the value arrives on the CLI's standard input, never as an argument). */
  'secrets.set': op({
    args: z.object({ workspace: z.string().min(1), name: z.string().min(1), value: z.string() }),
    async run({ services: s }, a) {
      const ws = await workspace(s, a.workspace);
      const boot = await s.accounts.ensureBootstrap();
      const { created } = await s.secrets.set(ws.id, a.name, a.value, { userId: boot.userId, type: 'cli' });
      return { name: a.name, workspaceId: ws.id, created };
    },
  }),

  'secrets.list': op({
    args: z.object({ workspace: z.string().min(1) }),
    async run({ services: s }, a) {
      return s.secrets.list((await workspace(s, a.workspace)).id);
    },
  }),

  'secrets.delete': op({
    args: z.object({ workspace: z.string().min(1), name: z.string().min(1) }),
    async run({ services: s }, a) {
      const ws = await workspace(s, a.workspace);
      const boot = await s.accounts.ensureBootstrap();
      const { usedBy } = await s.secrets.delete(ws.id, a.name, { userId: boot.userId, type: 'cli' });
      return { name: a.name, deleted: true, usedBy };
    },
  }),

  /** Re-encrypts every secret of every workspace in one transaction (see SecretsService.rotateKey). */
  'secrets.rotate-key': op({
    args: z.object({}),
    async run({ services: s }) {
      return s.secrets.rotateKey();
    },
  }),

  'workflows.deploy': op({
    args: z.object({ workspace: z.string().min(1), name: z.string().min(1), description: z.string().optional(), definition: z.record(z.string(), z.unknown()) }),
    async run({ services: s }, a) {
      const { accounts, workflows } = s;
      const ws = await workspace(s, a.workspace);
      const boot = await accounts.ensureBootstrap();
      const actor = { userId: boot.userId, type: 'cli' as const };
      const input = { name: a.name, description: a.description, definition: a.definition };
      const existing = await workflows.findByName(ws.id, a.name);
      const w = existing ? await workflows.updateWorkflow(ws.id, existing.id, input, actor) : await workflows.createWorkflow(ws.id, input, actor);
      const deployed = publicWorkflow(await workflows.deployWorkflow(ws.id, w.id, actor));
      return { workflowId: deployed.id, version: deployed.version, name: deployed.name };
    },
  }),

  'workflows.list': op({
    args: z.object({ workspace: z.string().min(1) }),
    async run({ services: s, ctx }, a) {
      const ws = await workspace(s, a.workspace);
      const rows = await s.workflows.list(ws.id, 10_000);
      // Trigger URLs on WEFT_BASE_URL, else the address a local server listens on.
      const urls = await s.webhookRegistry.urls(rows.filter((r) => r.active_version_id !== null).map((r) => r.id), `http://localhost:${ctx.config.port}`);
      return rows.map((r) => {
        const rest = workflowSummary(r);
        const webhookUrl = urls.get(r.id);
        return JSON.parse(JSON.stringify(webhookUrl ? { ...rest, webhookUrl } : rest)) as typeof rest & { webhookUrl?: string };
      });
    },
  }),

  /**
   * Runs the deployed version, billed to the workflow's workspace under its plan's limits (as a
   * workspace key would be). Sync: the result. Async: the queued execution id, to follow with
   * `runs.status`; outside a server nothing else takes the job, so this process runs it.
   */
  'workflows.run': op({
    runs: true,
    args: z.object({ workflow: z.string().min(1), workspace: z.string().optional(), input: z.record(z.string(), z.unknown()), async: z.boolean().default(false) }),
    async run(env, a) {
      const runs = requireRuns(env);
      const s = env.services;
      const ws = a.workspace ? await workspace(s, a.workspace) : undefined;
      const wf = ws
        ? (await s.workflows.findInWorkspace(ws.id, a.workflow)) ?? (await s.workflows.findByName(ws.id, a.workflow))
        : isUuid(a.workflow) ? await s.workflows.findWorkflowForRun(a.workflow) : undefined;
      if (!wf) throw new CommandError(`No workflow "${a.workflow}"${ws ? ` in workspace "${ws.name}"` : ' (give its id, or its name with --workspace)'}`);
      const run = { workspaceId: wf.workspace_id, billedAccount: `workspace:${wf.workspace_id}`, plan: await s.accounts.workspacePlan(wf.workspace_id) };
      const admitted = await runs.admit(wf, run, a.async ? 'async' : 'sync');
      const start = { apiKeyId: null, trigger: 'manual', baseUrl: runs.baseUrl() };
      if (a.async) {
        const executionId = await runs.enqueue(admitted, run, a.input, start);
        // No caller-chosen id: the public id is the stored one. runJob leases the row, so a worker that
        // also took it (PostgreSQL) and this process never both run it.
        if (!env.inServer) env.background(runs.runJob(executionId));
        return { executionId, workflowId: wf.id, workspaceId: wf.workspace_id, status: 'queued', output: undefined as unknown, error: undefined as string | undefined };
      }
      const { executionId, result, output } = await runs.runSync(admitted, run, a.input, { ...start, signal: env.signal });
      return {
        executionId, workflowId: wf.id, workspaceId: wf.workspace_id, status: result.status as string, output: output ?? null,
        error: result.error ? (result.error.blockName ? `Block "${result.error.blockName}" failed: ${result.error.message}` : result.error.message) : undefined,
      };
    },
  }),

  /** Where an async run stands; `done` once it completed, failed, was cancelled or waits for a person. */
  'runs.status': op({
    runs: true,
    args: z.object({ workspaceId: z.string().min(1), workflowId: z.string().min(1), executionId: z.string().min(1) }),
    async run(env, a) {
      const row = await requireRuns(env).findRun(a.workspaceId, a.workflowId, a.executionId);
      if (!row) throw new CommandError(`No run ${a.executionId}`);
      return {
        executionId: a.executionId, workflowId: row.workflow_id, workspaceId: row.workspace_id, status: row.status as string,
        done: TERMINAL.has(row.status), output: (row.output ?? null) as unknown, error: row.error ?? undefined,
      };
    },
  }),

  'credits.grant': op({
    args: z.object({ ...creditTarget, usd: z.number().finite().refine((n) => n !== 0 && Math.abs(n) <= 1_000_000, '--usd must be a non-zero number of dollars, at most 1000000'), note: z.string().optional() }),
    async run({ services: s, ctx: { db } }, a) {
      const account = await billedAccount(s, a);
      try {
        await ledger.grant(db, account, ledger.usdToNano(a.usd), a.note ?? 'granted with the CLI');
      } catch (err) {
        // Too much taken: refused whole, and the message says what is free and what requests in flight hold.
        if (err instanceof ledger.NegativeBalanceError) throw new CommandError(err.message);
        throw err;
      }
      // The balance as callers see it: deposits of requests in flight taken out (and shown as reserved).
      const b = await s.ai.balance(account);
      const free = b?.balanceNano ?? 0;
      return { account, grantedUsd: a.usd, balanceUsd: ledger.roundUsd(free), reservedUsd: ledger.roundUsd(b?.reservedNano ?? 0), balance: ledger.formatUsd(free) };
    },
  }),

  'credits.show': op({
    args: z.object({ ...creditTarget, entries: z.number().int().min(0).max(1000) }),
    async run({ services: s, ctx: { db } }, a) {
      const account = await billedAccount(s, a);
      const b = await s.ai.balance(account);
      const rows = a.entries > 0 ? await ledger.listLedger(db, account, a.entries) : [];
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
    },
  }),

  'usage.reconcile': op({
    args: z.object({ dryRun: z.boolean().default(false) }),
    async run({ services: s }, a) {
      const { checked, differences } = await s.limits.reconcileUsage(!a.dryRun);
      return { checked, fixed: !a.dryRun && differences.length > 0, differences };
    },
  }),
};

export type OperationName = keyof typeof operations;
type OperationOf<N extends OperationName> = (typeof operations)[N];
export type ArgsOf<N extends OperationName> = z.input<OperationOf<N>['args']>;
export type ResultOf<N extends OperationName> = Awaited<ReturnType<OperationOf<N>['run']>>;

export const isOperation = (name: string): name is OperationName => Object.hasOwn(operations, name);
export const needsRuns = (name: OperationName): boolean => (operations[name] as AnyOperation).runs === true;

/** Validates the arguments and runs the operation; every failure a user should read becomes a CommandError. */
export async function perform(name: string, args: unknown, env: OperationEnv): Promise<unknown> {
  if (!isOperation(name)) throw new CommandError(`Unknown admin command "${name}"`);
  const operation = operations[name] as AnyOperation;
  const parsed = operation.args.safeParse(args ?? {});
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new CommandError(issue ? `${issue.path.length ? `${issue.path.join('.')}: ` : ''}${issue.message}` : 'invalid arguments');
  }
  try {
    return await operation.run(env, parsed.data);
  } catch (err) {
    if (err instanceof HttpError) {
      const details = Array.isArray(err.extra.details) ? err.extra.details.map((d) => `  - ${(d as { message: string }).message}`).join('\n') : '';
      throw new CommandError(details ? `${err.message}\n${details}` : err.message);
    }
    throw err;
  }
}
