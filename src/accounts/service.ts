import type { Database, Queryable } from '../db/database.js';
import { uniqueViolation } from '../db/database.js';
import { lockWorkspace } from '../db/workspace-lock.js';
import { recordAudit, type ActorType } from '../audit/audit-log.js';
import type { AuthContext } from '../http/auth.js';
import { HttpError } from '../http/errors.js';
import { isUuid, newId } from '../ids.js';
import { AccessControl, billedAccountOf, type AuthorizeOptions, type WorkspaceAccess } from './access.js';
import { KeyAuthenticator } from './key-auth.js';
import { displaySuffix, generateKeySecret, hashKey } from './key-secret.js';
import { parseScopedToken, scopedTokenValid, signScopedToken } from './scoped-token.js';
import * as store from './store.js';
import type { ApiKeyRow, KeyType, Role, UserRow, WorkspaceRow } from './store.js';

export type { Role, KeyType, UserRow, WorkspaceRow, ApiKeyRow } from './store.js';
export type { WorkspaceAccess, AuthorizeOptions } from './access.js';
export { roleAtLeast } from './access.js';

/** The access check other areas are handed (the accounts service implements it). */
export interface AccessControlled {
  authorize(auth: AuthContext | undefined, workspaceId: string, minRole: Role, opts?: AuthorizeOptions): Promise<WorkspaceAccess>;
}

/** Who did something, for the audit log: a key of a kind, or the CLI (no key). */
export interface Actor { userId?: string | null; keyId?: string | null; type?: ActorType }

/** Active (not revoked) keys of one owner: a workspace's workspace keys, or a user's personal keys. */
export const MAX_ACTIVE_KEYS = 1_000;

export const actorOf = (access: Pick<WorkspaceAccess, 'userId' | 'keyId' | 'keyType' | 'via'>): Actor => ({
  // A workspace key acts as its workspace: no user is recorded as the actor.
  userId: access.keyType === 'workspace' ? null : access.userId,
  // A signed-in user (the dashboard): keyId is the session's id.
  keyId: access.keyId,
  type: access.via === 'session' ? 'session' : access.keyType === 'workspace' ? 'workspace_key' : 'personal_key',
});

export interface PublicKey {
  id: string; name: string; type: KeyType; workspaceId: string | null; userId: string;
  displayKey: string; createdAt: string; lastUsedAt: string | null;
}

export const publicKey = (k: ApiKeyRow): PublicKey => ({
  id: k.id,
  name: k.name,
  type: k.type,
  workspaceId: k.workspace_id,
  userId: k.user_id,
  displayKey: k.display_suffix,
  createdAt: k.created_at.toISOString(),
  lastUsedAt: k.last_used_at ? k.last_used_at.toISOString() : null,
});

export interface CreatedKey { key: PublicKey; secret: string }

/** The billed account of a key and its plan, plus the workspaces whose storage it pays for. */
export interface BilledAccount { account: string; plan: string; workspaceIds: string[] }

export interface AccountsOptions {
  /** How long key, access, billed-account and plan lookups are reused (changes made elsewhere bite within it). */
  keyCacheMs: number;
  /** Plan of users and workspaces created here. */
  defaultPlan: string;
  /** Email of the admin user the first bootstrap creates (default admin@localhost). */
  adminEmail?: string;
  /** The server secret scoped tokens are signed with (not stored in the database; scoped-token.ts). */
  tokenSecret?: () => Buffer;
}

/**
 * Users, workspaces, memberships, API keys and plans: the one owner of those tables. Other areas ask it
 * who a key is, what it may do in a workspace, who pays, and which plan applies.
 */
export class AccountsService implements AccessControlled {
  readonly keys: KeyAuthenticator;
  private readonly access: AccessControl;
  private readonly billed = new Map<string, { value: BilledAccount; until: number }>();
  private readonly plans = new Map<string, { plan: string; until: number }>();

  constructor(private readonly db: Database, private readonly opts: AccountsOptions) {
    this.keys = new KeyAuthenticator(db, opts.keyCacheMs);
    this.access = new AccessControl(db, opts.keyCacheMs);
  }

  verifyKey = (secret: string): Promise<AuthContext | undefined> => this.keys.authenticate(secret);

  private tokenSecret(): Buffer {
    if (!this.opts.tokenSecret) throw new Error('scoped tokens need a server secret (AccountsOptions.tokenSecret)');
    return this.opts.tokenSecret();
  }

  authorize(auth: AuthContext | undefined, workspaceId: string, minRole: Role, opts: AuthorizeOptions = {}): Promise<WorkspaceAccess> {
    return this.access.authorize(auth, workspaceId, minRole, opts);
  }

  /** A token that acts as the caller's key for `scope` only, for `ttlMs` (pages carry it instead of the key). */
  async issueScopedToken(auth: AuthContext, scope: string, ttlMs: number): Promise<string> {
    const key = await store.findKey(this.db, auth.keyId);
    if (!key || key.revoked_at) throw new HttpError(401, 'Invalid API key');
    return signScopedToken(this.tokenSecret(), key.id, key.key_hash, scope, Date.now() + ttlMs);
  }

  /** The caller behind a scoped token, or undefined when it is malformed, expired, for another scope, or its key was revoked. */
  async verifyScopedToken(token: string, scope: string): Promise<AuthContext | undefined> {
    const parsed = parseScopedToken(token);
    if (!parsed) return undefined;
    const key = await store.findKey(this.db, parsed.keyId);
    if (!key || key.revoked_at || !scopedTokenValid(this.tokenSecret(), parsed, key.key_hash, scope, Date.now())) return undefined;
    return { keyId: key.id, keyType: key.type, userId: key.user_id, keyWorkspaceId: key.workspace_id };
  }

  /** Forgets cached access, billed accounts and plans of this process (something changed here). */
  private invalidate(): void {
    this.access.invalidate();
    this.billed.clear();
    this.plans.clear();
  }

  /** Billed account of a key: the workspace for workspace keys, the user for personal keys. Cached briefly. */
  async billedAccount(auth: AuthContext): Promise<BilledAccount> {
    const hit = this.billed.get(auth.keyId);
    if (hit && hit.until > Date.now()) return hit.value;
    let value: BilledAccount;
    if (auth.keyType === 'workspace' && auth.keyWorkspaceId) {
      value = { account: billedAccountOf(auth, auth.keyWorkspaceId), plan: await this.workspacePlan(auth.keyWorkspaceId), workspaceIds: [auth.keyWorkspaceId] };
    } else {
      const user = await store.findUser(this.db, auth.userId);
      const ws = await store.workspaceIdsOfUser(this.db, auth.userId);
      value = { account: `user:${auth.userId}`, plan: user?.plan ?? 'free', workspaceIds: ws };
    }
    if (this.billed.size > 10_000) this.billed.clear();
    this.billed.set(auth.keyId, { value, until: Date.now() + this.opts.keyCacheMs });
    return value;
  }

  /**
   * A workspace's plan, reused for `keyCacheMs` (it sets timeouts and limits of runs). Inside a
   * transaction pass its `q`: on PGlite a query on the database itself would wait for the transaction.
   */
  async workspacePlan(workspaceId: string, q: Queryable = this.db): Promise<string> {
    const hit = this.plans.get(workspaceId);
    if (hit && hit.until > Date.now()) return hit.plan;
    const plan = (await store.findWorkspace(q, workspaceId))?.plan ?? 'free';
    if (this.plans.size > 10_000) this.plans.clear();
    this.plans.set(workspaceId, { plan, until: Date.now() + this.opts.keyCacheMs });
    return plan;
  }

  /** Instance administrators may change plans (and, later, manage users and credits). */
  async isInstanceAdmin(userId: string): Promise<boolean> {
    return (await store.findUser(this.db, userId))?.is_admin === true;
  }

  /** Sets a workspace's plan; the caller has checked that an instance administrator asked. */
  async setWorkspacePlan(workspaceId: string, plan: string, actor: Actor = { type: 'cli' }): Promise<WorkspaceRow | undefined> {
    const ws = await this.db.tx(async (q) => {
      const updated = await store.setWorkspacePlan(q, workspaceId, plan);
      if (updated) {
        await recordAudit(q, {
          workspaceId, ...auditActor(actor), action: 'workspace.plan_changed',
          resourceType: 'workspace', resourceId: workspaceId, resourceName: updated.name, metadata: { plan },
        });
      }
      return updated;
    });
    this.invalidate();
    return ws;
  }

  /** Ensures the admin user and the `default` workspace exist. Idempotent. */
  async ensureBootstrap(): Promise<{ userId: string; workspaceId: string; created: boolean }> {
    const plan = this.opts.defaultPlan;
    return this.db.tx(async (q) => {
      if (this.db.mode === 'postgres') await q.query('SELECT pg_advisory_xact_lock(872342)');
      let created = false;
      let admin = await store.findFirstAdmin(q);
      if (!admin) {
        admin = await store.insertUser(q, { id: newId(), email: this.opts.adminEmail ?? 'admin@localhost', name: 'Admin', isAdmin: true, plan });
        created = true;
      }
      let ws = await store.findWorkspaceByName(q, 'default');
      if (!ws) {
        ws = await store.insertWorkspace(q, { id: newId(), name: 'default', ownerId: admin.id, plan });
        await store.upsertMembership(q, ws.id, admin.id, 'admin');
        created = true;
      }
      return { userId: admin.id, workspaceId: ws.id, created };
    });
  }

  async createWorkspace(name: string, ownerId: string, actor: Actor = { type: 'cli' }): Promise<WorkspaceRow> {
    if (!/^[A-Za-z0-9][A-Za-z0-9 _.-]{0,99}$/.test(name)) {
      throw new HttpError(400, 'Workspace name must be 1 to 100 letters, digits, spaces, dots, dashes or underscores');
    }
    try {
      return await this.db.tx(async (q) => {
        const ws = await store.insertWorkspace(q, { id: newId(), name, ownerId, plan: this.opts.defaultPlan });
        await store.upsertMembership(q, ws.id, ownerId, 'admin');
        await recordAudit(q, {
          workspaceId: ws.id, ...auditActor(actor), action: 'workspace.created',
          resourceType: 'workspace', resourceId: ws.id, resourceName: ws.name,
        });
        return ws;
      });
    } catch (err) {
      if (uniqueViolation(err)) throw new HttpError(409, `A workspace named "${name}" already exists`);
      throw err;
    }
  }

  /** Finds a workspace by UUID or by name. */
  async resolveWorkspace(idOrName: string): Promise<WorkspaceRow | undefined> {
    return resolveWorkspace(this.db, idOrName);
  }

  findWorkspace(id: string): Promise<WorkspaceRow | undefined> {
    return store.findWorkspace(this.db, id);
  }

  listWorkspaces(): Promise<WorkspaceRow[]> {
    return store.listWorkspaces(this.db);
  }

  findUser(id: string): Promise<UserRow | undefined> {
    return isUuid(id) ? store.findUser(this.db, id) : Promise.resolve(undefined);
  }

  async createUser(input: { email: string; name?: string; isAdmin?: boolean }): Promise<UserRow> {
    try {
      return await store.insertUser(this.db, {
        id: newId(), email: input.email, name: input.name ?? input.email, isAdmin: input.isAdmin ?? false, plan: this.opts.defaultPlan,
      });
    } catch (err) {
      if (uniqueViolation(err)) throw new HttpError(409, `A user with the email ${input.email} already exists`);
      throw err;
    }
  }

  /** The workspaces a user is a member of, with the role, in the order joined (the dashboard's switcher). */
  workspacesOfUser(userId: string): Promise<{ id: string; name: string; role: Role }[]> {
    return store.workspacesOfUser(this.db, userId);
  }

  roleOf(workspaceId: string, userId: string): Promise<Role | undefined> {
    return store.findRole(this.db, workspaceId, userId);
  }

  async createKey(input: { workspaceId: string; userId: string; type: KeyType; name?: string }, actor: Actor = { type: 'cli' }): Promise<CreatedKey> {
    const secret = generateKeySecret();
    const name = input.name?.trim() || (input.type === 'workspace' ? 'Workspace key' : 'Personal key');
    const owner = input.type === 'workspace' ? input.workspaceId : input.userId;
    const row = await this.db.tx(async (q) => {
      // The key list answers every active key at once, so their number is bounded per owner; the lock makes a
      // concurrent create's count see this one's row.
      await lockWorkspace(q, 'apiKeys', owner);
      if ((await store.countActiveKeys(q, input.type, owner)) >= MAX_ACTIVE_KEYS) {
        throw new HttpError(400, input.type === 'workspace'
          ? `A workspace holds at most ${MAX_ACTIVE_KEYS} workspace keys: revoke one before creating another`
          : `A user holds at most ${MAX_ACTIVE_KEYS} personal keys: revoke one before creating another`);
      }
      const k = await store.insertApiKey(q, {
        id: newId(),
        hash: hashKey(secret),
        suffix: displaySuffix(secret),
        name,
        type: input.type,
        userId: input.userId,
        workspaceId: input.type === 'workspace' ? input.workspaceId : null,
      });
      await recordAudit(q, {
        workspaceId: input.workspaceId, ...auditActor(actor), action: 'api_key.created',
        resourceType: 'api_key', resourceId: k.id, resourceName: k.name, metadata: { type: k.type },
      });
      return k;
    });
    return { key: publicKey(row), secret };
  }

  findKey(id: string): Promise<ApiKeyRow | undefined> {
    return isUuid(id) ? store.findKey(this.db, id) : Promise.resolve(undefined);
  }

  listKeys(workspaceId?: string): Promise<ApiKeyRow[]> {
    return workspaceId ? store.listKeysForWorkspace(this.db, workspaceId) : store.listAllKeys(this.db);
  }

  /** The workspace whose audit log records actions on a user's personal keys: the first they joined. */
  async homeWorkspaceOf(userId: string): Promise<string | undefined> {
    return (await store.workspaceIdsOfUser(this.db, userId))[0];
  }

  /** Revokes a key; `workspaceId` is the workspace whose audit log records it. */
  /** Deletes at most `batchSize` keys revoked before `cutoff` (the retention sweep's); how many went. */
  deleteKeysRevokedBefore(cutoff: Date, batchSize: number): Promise<number> {
    return store.deleteKeysRevokedBefore(this.db, cutoff, batchSize);
  }

  async revokeKey(keyId: string, workspaceId: string | undefined, actor: Actor = { type: 'cli' }): Promise<ApiKeyRow | undefined> {
    const revoked = await this.db.tx(async (q) => {
      const k = await store.revokeKey(q, keyId);
      if (k && workspaceId) {
        await recordAudit(q, {
          workspaceId, ...auditActor(actor), action: 'api_key.revoked',
          resourceType: 'api_key', resourceId: k.id, resourceName: k.name, metadata: { type: k.type },
        });
      }
      return k;
    });
    this.keys.forget(keyId);
    return revoked;
  }

  async setAllowPersonalKeys(workspaceId: string, allow: boolean, actor: Actor): Promise<WorkspaceRow | undefined> {
    const updated = await this.db.tx(async (q) => {
      const ws = await store.setAllowPersonalKeys(q, workspaceId, allow);
      await recordAudit(q, {
        workspaceId, ...auditActor(actor), action: 'workspace.setting_changed',
        resourceType: 'workspace', resourceId: workspaceId, resourceName: ws?.name, metadata: { allowPersonalKeys: allow },
      });
      return ws;
    });
    this.invalidate();
    return updated;
  }

  async addMember(workspaceId: string, userId: string, role: Role, actor: Actor = { type: 'cli' }): Promise<void> {
    await this.db.tx(async (q) => {
      await store.upsertMembership(q, workspaceId, userId, role);
      await recordAudit(q, {
        workspaceId, ...auditActor(actor), action: 'member.changed',
        resourceType: 'membership', resourceId: userId, metadata: { role },
      });
    });
    this.invalidate();
  }

  /**
   * Takes a user out of a workspace: their personal keys and sessions no longer reach it, and the workspace
   * keys they created stop too (a workspace key's role is its creator's). The last admin cannot be removed.
   * Other processes notice within WEFT_KEY_CACHE_MS.
   */
  async removeMember(workspaceId: string, userId: string, actor: Actor = { type: 'cli' }): Promise<void> {
    await this.db.tx(async (q) => {
      const admins = await store.lockAdmins(q, workspaceId);
      if (admins.length === 1 && admins[0] === userId) {
        throw new HttpError(409, 'The last admin of a workspace cannot be removed: make another member admin first', { code: 'LAST_ADMIN' });
      }
      const role = await store.deleteMembership(q, workspaceId, userId);
      if (!role) throw new HttpError(404, 'Member not found');
      await recordAudit(q, {
        workspaceId, ...auditActor(actor), action: 'member.removed', resourceType: 'membership', resourceId: userId, metadata: { role },
      });
    });
    this.invalidate();
  }
}

function auditActor(actor: Actor) {
  return { actorId: actor.userId ?? null, actorKeyId: actor.keyId ?? null, actorType: actor.type ?? (actor.keyId ? 'personal_key' : 'cli') };
}

/** Finds a workspace by UUID or by name. */
export async function resolveWorkspace(q: Queryable, idOrName: string): Promise<WorkspaceRow | undefined> {
  const ws = isUuid(idOrName) ? await store.findWorkspace(q, idOrName) : undefined;
  return ws ?? (await store.findWorkspaceByName(q, idOrName));
}
