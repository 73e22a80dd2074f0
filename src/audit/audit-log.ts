// The audit log: written inside the transaction that makes each administrative change (by whichever area
// makes it), read back per workspace. It has no service of its own: an entry must commit with its change.
import type { Queryable } from '../db/database.js';
import { newId } from '../ids.js';

/** Which kind of caller acted: a personal key, a workspace key (acting as its workspace), the CLI, or a user signed in to the dashboard (session). */
export type ActorType = 'personal_key' | 'workspace_key' | 'cli' | 'session';

export interface AuditEntry {
  workspaceId: string;
  actorId?: string | null;
  actorKeyId?: string | null;
  actorType?: ActorType;
  action: string;
  resourceType: string;
  resourceId?: string | null;
  resourceName?: string | null;
  metadata?: Record<string, unknown>;
}

export interface AuditRow {
  id: string; workspace_id: string; actor_id: string | null; actor_key_id: string | null; actor_type: ActorType | null; action: string;
  resource_type: string; resource_id: string | null; resource_name: string | null;
  metadata: Record<string, unknown>; created_at: Date;
}

/** Records an administrative action; call it inside the transaction that makes the change. */
export async function recordAudit(q: Queryable, e: AuditEntry): Promise<void> {
  await q.query(
    `INSERT INTO audit_logs (id, workspace_id, actor_id, actor_key_id, actor_type, action, resource_type, resource_id, resource_name, metadata)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`,
    [newId(), e.workspaceId, e.actorId ?? null, e.actorKeyId ?? null, e.actorType ?? (e.actorKeyId ? 'personal_key' : 'cli'), e.action, e.resourceType,
      e.resourceId ?? null, e.resourceName ?? null, JSON.stringify(e.metadata ?? {})],
  );
}

export async function listAudit(
  q: Queryable,
  workspaceId: string,
  limit: number,
  after?: { t: string; id: string },
): Promise<AuditRow[]> {
  if (after) {
    return q.query<AuditRow>(
      `SELECT * FROM audit_logs WHERE workspace_id = $1 AND (created_at, id) < ($2::timestamptz, $3::uuid)
       ORDER BY created_at DESC, id DESC LIMIT $4`,
      [workspaceId, after.t, after.id, limit],
    );
  }
  return q.query<AuditRow>(
    'SELECT * FROM audit_logs WHERE workspace_id = $1 ORDER BY created_at DESC, id DESC LIMIT $2',
    [workspaceId, limit],
  );
}
