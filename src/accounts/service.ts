import type { Database, Queryable } from '../db/database.js';
import { uniqueViolation } from '../db/database.js';
import { recordAudit } from '../audit/store.js';
import { HttpError } from '../http/errors.js';
import { invalidateAccessCache } from '../http/auth.js';
import { isUuid, newId } from '../ids.js';
import { displaySuffix, generateKeySecret, hashKey } from './key-secret.js';
import * as store from './store.js';
import type { ApiKeyRow, KeyType, Role } from './store.js';

export type { Role, KeyType } from './store.js';

export interface Actor { userId?: string | null; keyId?: string | null }

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

const roleRank: Record<Role, number> = { read: 1, write: 2, admin: 3 };
export const roleAtLeast = (role: Role, min: Role): boolean => roleRank[role] >= roleRank[min];

/** Ensures the admin user and the `default` workspace exist. Idempotent. */
export async function ensureBootstrap(db: Database, plan: string): Promise<{ userId: string; workspaceId: string; created: boolean }> {
  return db.tx(async (q) => {
    if (db.mode === 'postgres') await q.query('SELECT pg_advisory_xact_lock(872342)');
    let created = false;
    let admin = await store.findFirstAdmin(q);
    if (!admin) {
      admin = await store.insertUser(q, { id: newId(), email: 'admin@localhost', name: 'Admin', isAdmin: true, plan });
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

export async function createWorkspace(db: Database, name: string, ownerId: string, plan: string, actor: Actor = {}) {
  if (!/^[A-Za-z0-9][A-Za-z0-9 _.-]{0,99}$/.test(name)) {
    throw new HttpError(400, 'Workspace name must be 1 to 100 letters, digits, spaces, dots, dashes or underscores');
  }
  try {
    return await db.tx(async (q) => {
      const ws = await store.insertWorkspace(q, { id: newId(), name, ownerId, plan });
      await store.upsertMembership(q, ws.id, ownerId, 'admin');
      await recordAudit(q, {
        workspaceId: ws.id, actorId: actor.userId ?? ownerId, actorKeyId: actor.keyId, action: 'workspace.created',
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
export async function resolveWorkspace(q: Queryable, idOrName: string) {
  const ws = isUuid(idOrName) ? await store.findWorkspace(q, idOrName) : undefined;
  return ws ?? (await store.findWorkspaceByName(q, idOrName));
}

export interface CreatedKey { key: PublicKey; secret: string }

export async function createKey(
  db: Database,
  input: { workspaceId: string; userId: string; type: KeyType; name?: string },
  actor: Actor = {},
): Promise<CreatedKey> {
  const secret = generateKeySecret();
  const name = input.name?.trim() || (input.type === 'workspace' ? 'Workspace key' : 'Personal key');
  const row = await db.tx(async (q) => {
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
      workspaceId: input.workspaceId, actorId: actor.userId ?? input.userId, actorKeyId: actor.keyId,
      action: 'api_key.created', resourceType: 'api_key', resourceId: k.id, resourceName: k.name, metadata: { type: k.type },
    });
    return k;
  });
  return { key: publicKey(row), secret };
}

/** Revokes a key; `workspaceId` is the workspace whose audit log records it. */
export async function revokeKey(db: Database, keyId: string, workspaceId: string, actor: Actor = {}): Promise<ApiKeyRow | undefined> {
  return db.tx(async (q) => {
    const k = await store.revokeKey(q, keyId);
    if (k) {
      await recordAudit(q, {
        workspaceId, actorId: actor.userId, actorKeyId: actor.keyId, action: 'api_key.revoked',
        resourceType: 'api_key', resourceId: k.id, resourceName: k.name, metadata: { type: k.type },
      });
    }
    return k;
  });
}

export async function setAllowPersonalKeys(db: Database, workspaceId: string, allow: boolean, actor: Actor = {}) {
  const updated = await db.tx(async (q) => {
    const ws = await store.setAllowPersonalKeys(q, workspaceId, allow);
    await recordAudit(q, {
      workspaceId, actorId: actor.userId, actorKeyId: actor.keyId, action: 'workspace.setting_changed',
      resourceType: 'workspace', resourceId: workspaceId, resourceName: ws?.name, metadata: { allowPersonalKeys: allow },
    });
    return ws;
  });
  invalidateAccessCache();
  return updated;
}

export async function addMember(db: Database, workspaceId: string, userId: string, role: Role, actor: Actor = {}) {
  await db.tx(async (q) => {
    await store.upsertMembership(q, workspaceId, userId, role);
    await recordAudit(q, {
      workspaceId, actorId: actor.userId, actorKeyId: actor.keyId, action: 'member.changed',
      resourceType: 'membership', resourceId: userId, metadata: { role },
    });
  });
  invalidateAccessCache();
}
