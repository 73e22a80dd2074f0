// The audit log: written inside the transaction that makes each administrative change (by whichever area
// makes it), read back per workspace. It has no service of its own: an entry must commit with its change.
import { deleteOlderThan } from '../db/batch-delete.js';
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

/** An entry as read back: with its actor's name and email while the user exists. */
export type AuditRecord = AuditRow & { actor_name: string | null; actor_email: string | null };

export interface AuditFilter {
  actions?: string[];
  resourceTypes?: string[];
  resourceId?: string;
  actorId?: string;
  startDate?: Date;
  endDate?: Date;
  /** Also entries of users who are no longer the workspace's owner or members (default: not). */
  includeDeparted?: boolean;
}

const AUDIT_COLUMNS = `a.*, u.name AS actor_name, u.email AS actor_email`;

/** Entries of a workspace, newest first (keyset pagination), filtered. */
export async function listAudit(
  q: Queryable,
  workspaceId: string,
  limit: number,
  after?: { t: string; id: string },
  f: AuditFilter = {},
): Promise<AuditRecord[]> {
  const where = ['a.workspace_id = $1'];
  const params: unknown[] = [workspaceId];
  const add = (clause: (n: string) => string, value: unknown) => {
    params.push(value);
    where.push(clause(`$${params.length}`));
  };
  if (f.actions?.length) add((p) => `a.action = ANY(${p}::text[])`, f.actions);
  if (f.resourceTypes?.length) add((p) => `a.resource_type = ANY(${p}::text[])`, f.resourceTypes);
  if (f.resourceId !== undefined) add((p) => `a.resource_id = ${p}`, f.resourceId);
  if (f.actorId !== undefined) add((p) => `a.actor_id::text = ${p}`, f.actorId);
  if (f.startDate) add((p) => `a.created_at >= ${p}::timestamptz`, f.startDate);
  if (f.endDate) add((p) => `a.created_at <= ${p}::timestamptz`, f.endDate);
  if (!f.includeDeparted) {
    // A user's own actions (their key or their session) once they left the workspace; the CLI's and
    // workspace keys' entries stay: those act as the operator or the workspace.
    where.push(`(a.actor_id IS NULL OR a.actor_type IN ('cli', 'workspace_key')
      OR EXISTS (SELECT 1 FROM workspaces w WHERE w.id = a.workspace_id AND w.owner_id = a.actor_id)
      OR EXISTS (SELECT 1 FROM memberships m WHERE m.workspace_id = a.workspace_id AND m.user_id = a.actor_id))`);
  }
  if (after) {
    params.push(after.t, after.id);
    where.push(`(a.created_at, a.id) < ($${params.length - 1}::timestamptz, $${params.length}::uuid)`);
  }
  params.push(limit);
  return q.query<AuditRecord>(
    `SELECT ${AUDIT_COLUMNS} FROM audit_logs a LEFT JOIN users u ON u.id = a.actor_id
      WHERE ${where.join(' AND ')} ORDER BY a.created_at DESC, a.id DESC LIMIT $${params.length}`,
    params,
  );
}

/** One entry by id, among the workspaces a caller reaches. */
export const findAudit = (q: Queryable, id: string, workspaceIds: readonly string[]) =>
  q.query<AuditRecord>(
    `SELECT ${AUDIT_COLUMNS} FROM audit_logs a LEFT JOIN users u ON u.id = a.actor_id
      WHERE a.id::text = $1 AND a.workspace_id::text = ANY($2::text[])`,
    [id, workspaceIds],
  ).then((r) => r[0]);

/**
 * Deletes one batch of a database's audit entries written before `cutoff` (WEFT_AUDIT_RETENTION_DAYS), along
 * the created_at index (migration 0038); answers how many went.
 */
export const deleteAuditBefore = (q: Queryable, cutoff: Date, batchSize: number) =>
  deleteOlderThan(q, 'audit_logs', 'created_at', cutoff, batchSize);
