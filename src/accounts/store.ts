import { deleteOlderThan } from '../db/batch-delete.js';
import type { Queryable } from '../db/database.js';

export type Role = 'admin' | 'write' | 'read';
export type KeyType = 'personal' | 'workspace';

export interface UserRow { id: string; email: string; name: string; is_admin: boolean; plan: string; created_at: Date }
export interface WorkspaceRow { id: string; name: string; owner_id: string; allow_personal_keys: boolean; plan: string; created_at: Date; updated_at: Date }
export interface ApiKeyRow {
  id: string; key_hash: string; display_suffix: string; name: string; type: KeyType;
  user_id: string; workspace_id: string | null; created_at: Date; last_used_at: Date | null; revoked_at: Date | null;
}

export const insertUser = (q: Queryable, u: { id: string; email: string; name: string; isAdmin: boolean; plan: string }) =>
  q.query<UserRow>(
    'INSERT INTO users (id, email, name, is_admin, plan) VALUES ($1, $2, $3, $4, $5) RETURNING *',
    [u.id, u.email, u.name, u.isAdmin, u.plan],
  ).then((r) => r[0]);

export const findUser = (q: Queryable, id: string) =>
  q.query<UserRow>('SELECT * FROM users WHERE id = $1', [id]).then((r) => r[0]);

export const findFirstAdmin = (q: Queryable) =>
  q.query<UserRow>('SELECT * FROM users WHERE is_admin ORDER BY created_at LIMIT 1').then((r) => r[0]);

export const insertWorkspace = (q: Queryable, w: { id: string; name: string; ownerId: string; plan: string }) =>
  q.query<WorkspaceRow>(
    'INSERT INTO workspaces (id, name, owner_id, plan) VALUES ($1, $2, $3, $4) RETURNING *',
    [w.id, w.name, w.ownerId, w.plan],
  ).then((r) => r[0]);

export const findWorkspace = (q: Queryable, id: string) =>
  q.query<WorkspaceRow>('SELECT * FROM workspaces WHERE id = $1', [id]).then((r) => r[0]);

export const findWorkspaceByName = (q: Queryable, name: string) =>
  q.query<WorkspaceRow>('SELECT * FROM workspaces WHERE name = $1', [name]).then((r) => r[0]);

export const listWorkspaces = (q: Queryable) =>
  q.query<WorkspaceRow>('SELECT * FROM workspaces ORDER BY created_at, id');

export const setAllowPersonalKeys = (q: Queryable, id: string, allow: boolean) =>
  q.query<WorkspaceRow>(
    'UPDATE workspaces SET allow_personal_keys = $2, updated_at = now() WHERE id = $1 RETURNING *',
    [id, allow],
  ).then((r) => r[0]);

export const setWorkspacePlan = (q: Queryable, id: string, plan: string) =>
  q.query<WorkspaceRow>('UPDATE workspaces SET plan = $2, updated_at = now() WHERE id = $1 RETURNING *', [id, plan]).then((r) => r[0]);

export const upsertMembership = (q: Queryable, workspaceId: string, userId: string, role: Role) =>
  q.query(
    `INSERT INTO memberships (workspace_id, user_id, role) VALUES ($1, $2, $3)
     ON CONFLICT (workspace_id, user_id) DO UPDATE SET role = EXCLUDED.role`,
    [workspaceId, userId, role],
  );

/** Removes a membership; its role, or undefined when the user was not a member. */
export const deleteMembership = (q: Queryable, workspaceId: string, userId: string) =>
  q.query<{ role: Role }>('DELETE FROM memberships WHERE workspace_id = $1 AND user_id = $2 RETURNING role', [workspaceId, userId])
    .then((r) => r[0]?.role);

/** The workspace's admins, their rows locked (a removal checks it leaves one). */
export const lockAdmins = (q: Queryable, workspaceId: string) =>
  q.query<{ user_id: string }>("SELECT user_id FROM memberships WHERE workspace_id = $1 AND role = 'admin' ORDER BY user_id FOR UPDATE", [workspaceId])
    .then((r) => r.map((x) => x.user_id));

export const findRole = (q: Queryable, workspaceId: string, userId: string) =>
  q.query<{ role: Role }>('SELECT role FROM memberships WHERE workspace_id = $1 AND user_id = $2', [workspaceId, userId])
    .then((r) => r[0]?.role);

export const insertApiKey = (
  q: Queryable,
  k: { id: string; hash: string; suffix: string; name: string; type: KeyType; userId: string; workspaceId: string | null },
) =>
  q.query<ApiKeyRow>(
    `INSERT INTO api_keys (id, key_hash, display_suffix, name, type, user_id, workspace_id)
     VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING *`,
    [k.id, k.hash, k.suffix, k.name, k.type, k.userId, k.workspaceId],
  ).then((r) => r[0]);

/** Keys not revoked of one owner: a workspace's workspace keys, or a user's personal keys. */
export const countActiveKeys = (q: Queryable, type: KeyType, ownerId: string) =>
  q.query<{ n: number }>(
    type === 'workspace'
      ? "SELECT count(*)::int AS n FROM api_keys WHERE workspace_id = $1 AND type = 'workspace' AND revoked_at IS NULL"
      : "SELECT count(*)::int AS n FROM api_keys WHERE user_id = $1 AND type = 'personal' AND revoked_at IS NULL",
    [ownerId],
  ).then((r) => r[0]?.n ?? 0);

export const findKeyByHash = (q: Queryable, hash: string) =>
  q.query<ApiKeyRow>('SELECT * FROM api_keys WHERE key_hash = $1 AND revoked_at IS NULL', [hash]).then((r) => r[0]);

export const findKey = (q: Queryable, id: string) =>
  q.query<ApiKeyRow>('SELECT * FROM api_keys WHERE id = $1', [id]).then((r) => r[0]);

/** Keys usable in a workspace: its workspace keys and the personal keys of its members. */
export const listKeysForWorkspace = (q: Queryable, workspaceId: string) =>
  q.query<ApiKeyRow>(
    `SELECT k.* FROM api_keys k
      WHERE k.revoked_at IS NULL
        AND (k.workspace_id = $1
             OR (k.type = 'personal' AND k.user_id IN (SELECT user_id FROM memberships WHERE workspace_id = $1)))
      ORDER BY k.created_at, k.id`,
    [workspaceId],
  );

export const listAllKeys = (q: Queryable) =>
  q.query<ApiKeyRow>('SELECT * FROM api_keys WHERE revoked_at IS NULL ORDER BY created_at, id');

/**
 * Deletes one batch of keys revoked before `cutoff` (a revoked key only answers 401, and the audit log keeps
 * its name); answers how many went. Along the revoked keys' index (migration 0038).
 */
export const deleteKeysRevokedBefore = (q: Queryable, cutoff: Date, batchSize: number) =>
  deleteOlderThan(q, 'api_keys', 'revoked_at', cutoff, batchSize);

export const revokeKey = (q: Queryable, id: string) =>
  q.query<ApiKeyRow>('UPDATE api_keys SET revoked_at = now() WHERE id = $1 AND revoked_at IS NULL RETURNING *', [id])
    .then((r) => r[0]);

export const touchKey = (q: Queryable, id: string) =>
  q.query("UPDATE api_keys SET last_used_at = now() WHERE id = $1 AND (last_used_at IS NULL OR last_used_at < now() - interval '10 minutes')", [id]);

/** Workspaces a user belongs to, in the order they joined. */
export const workspaceIdsOfUser = (q: Queryable, userId: string) =>
  q.query<{ workspace_id: string }>('SELECT workspace_id FROM memberships WHERE user_id = $1 ORDER BY created_at, workspace_id', [userId])
    .then((r) => r.map((w) => w.workspace_id));

export const workspacesOfUser = (q: Queryable, userId: string) =>
  q.query<{ id: string; name: string; role: Role }>(
    `SELECT w.id, w.name, m.role FROM memberships m JOIN workspaces w ON w.id = m.workspace_id
      WHERE m.user_id = $1 ORDER BY m.created_at, w.name`,
    [userId],
  );
