import type { Database } from '../db/database.js';
import type { AuthContext } from '../http/auth.js';
import { HttpError } from '../http/errors.js';
import { isUuid } from '../ids.js';
import type { Role } from './store.js';

/** What a key may do in one workspace, resolved by `authorize`. */
export interface WorkspaceAccess {
  workspaceId: string;
  workspaceName: string;
  role: Role;
  /** The key's user: its owner for personal keys; for workspace keys the creator, kept for the record only. */
  userId: string;
  keyId: string;
  keyType: AuthContext['keyType'];
  /** `session`: a signed-in dashboard user; `keyId` is then the session's id. */
  via?: AuthContext['via'];
  /** Who pays: the workspace for workspace keys, the user for personal keys. */
  billedAccount: string;
  plan: string;
}

export interface AuthorizeOptions {
  /** Report a workspace the key cannot reach as `notFoundMessage` (404), exactly like a missing resource. */
  conceal?: boolean;
  notFoundMessage?: string;
}

const roleRank: Record<Role, number> = { read: 1, write: 2, admin: 3 };
export const roleAtLeast = (role: Role, min: Role): boolean => roleRank[role] >= roleRank[min];

/** The billed account of a key in a workspace: the workspace for workspace keys, the user for personal keys. */
export const billedAccountOf = (auth: Pick<AuthContext, 'keyType' | 'userId'>, workspaceId: string): string =>
  auth.keyType === 'workspace' ? `workspace:${workspaceId}` : `user:${auth.userId}`;

interface WorkspaceWithRole {
  id: string; name: string; allow_personal_keys: boolean; plan: string; role: Role | null; user_plan: string;
}

/**
 * The access check every area uses. Workspace and role lookups are kept as briefly as positive key
 * lookups, so membership, setting and plan changes made elsewhere bite within seconds (at once in this process).
 */
export class AccessControl {
  private readonly cache = new Map<string, { row: WorkspaceWithRole | undefined; until: number }>();

  constructor(private readonly db: Database, private readonly ttlMs: number) {}

  /** Forgets cached access at once (settings, memberships or plans changed in this process). */
  invalidate(): void {
    this.cache.clear();
  }

  private async workspaceWithRole(workspaceId: string, userId: string): Promise<WorkspaceWithRole | undefined> {
    const key = `${userId}:${workspaceId}`;
    const hit = this.cache.get(key);
    if (hit && hit.until > Date.now()) return hit.row;
    const rows = await this.db.query<WorkspaceWithRole>(
      `SELECT w.id, w.name, w.allow_personal_keys, w.plan, m.role, u.plan AS user_plan
         FROM workspaces w
         JOIN users u ON u.id = $2
         LEFT JOIN memberships m ON m.workspace_id = w.id AND m.user_id = $2
        WHERE w.id = $1`,
      [workspaceId, userId],
    );
    if (this.ttlMs > 0) {
      if (this.cache.size > 10_000) this.cache.clear();
      this.cache.set(key, { row: rows[0], until: Date.now() + this.ttlMs });
    }
    return rows[0];
  }

  /**
   * Checks that the caller's key may act in a workspace with at least `minRole`. A workspace key reaches
   * only its own workspace; its role there is its creator's (as in the reference), but it never acts as that user.
   */
  async authorize(auth: AuthContext | undefined, workspaceId: string, minRole: Role, opts: AuthorizeOptions = {}): Promise<WorkspaceAccess> {
    if (!auth) throw new HttpError(401, 'API key required');
    const notFound = () => new HttpError(404, opts.notFoundMessage ?? 'Workspace not found');
    if (!isUuid(workspaceId)) throw notFound();
    if (auth.keyType === 'workspace' && auth.keyWorkspaceId !== workspaceId) {
      if (opts.conceal) throw notFound();
      throw new HttpError(403, 'API key is not authorized for this workspace');
    }
    const ws = await this.workspaceWithRole(workspaceId, auth.userId);
    if (!ws) throw notFound();
    if (auth.keyType === 'personal') {
      if (!ws.role) throw notFound();
      // The setting is about keys: a signed-in user acts with the same roles but holds no key.
      if (!ws.allow_personal_keys && auth.via !== 'session') throw new HttpError(403, 'Personal API keys are not allowed for this workspace', { v2Details: { code: 'PERSONAL_API_KEYS_DISABLED' } });
    }
    if (!ws.role || !roleAtLeast(ws.role, minRole)) throw new HttpError(403, 'Access denied', { v2Details: { code: 'INSUFFICIENT_WORKSPACE_ROLE' } });
    return {
      workspaceId: ws.id,
      workspaceName: ws.name,
      role: ws.role,
      userId: auth.userId,
      keyId: auth.keyId,
      keyType: auth.keyType,
      ...(auth.via ? { via: auth.via } : {}),
      billedAccount: billedAccountOf(auth, ws.id),
      plan: auth.keyType === 'workspace' ? ws.plan : ws.user_plan,
    };
  }
}
