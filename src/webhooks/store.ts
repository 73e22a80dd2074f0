// SQL of the webhooks area: the path registry (webhooks) and delivery claims (webhook_deliveries).
import { ASYNC_COMMIT, ASYNC_COMMIT_NAME } from '../db/async-commit.js';
import type { Queryable } from '../db/database.js';
import { blobFromText, blobParam } from '../db/blob.js';
import { deleteOlderThan } from '../db/batch-delete.js';

export interface WebhookRow {
  workflow_id: string;
  workspace_id: string;
  block_id: string;
  path: string;
  generated_path: string;
  version_id: string | null;
}

/** An answer as sent, so a duplicate gets the same bytes. */
export interface StoredAnswer {
  status: number;
  headers: Record<string, string>;
  /** The body as sent: JSON text, or plain text when `text` is true ('' for none). */
  body: string;
  text?: boolean;
}

export interface DeliveryRow {
  workspace_id: string;
  delivery_key: string;
  workflow_id: string;
  claim_token: string;
  lease_until: Date;
  execution_id: string | null;
  answer: StoredAnswer | null;
  created_at: Date;
}

const cols = 'workflow_id, workspace_id, block_id, path, generated_path, version_id';

export async function findWebhook(q: Queryable, workflowId: string, lock = false): Promise<WebhookRow | undefined> {
  const rows = await q.query<WebhookRow>(`SELECT ${cols} FROM webhooks WHERE workflow_id = $1${lock ? ' FOR UPDATE' : ''}`, [workflowId]);
  return rows[0];
}

/** The deployed trigger answering at a path. */
export async function findDeployedByPath(q: Queryable, path: string): Promise<WebhookRow | undefined> {
  const rows = await q.query<WebhookRow>(`SELECT ${cols} FROM webhooks WHERE path = $1 AND version_id IS NOT NULL`, [path]);
  return rows[0];
}

/**
 * Another workflow holding the path, if any: a deployed one of any workspace, or one of another workspace
 * while it keeps the path (deployed or not). Paths are one namespace for every tenant, so a workspace's path
 * stays its own while it is undeployed: another tenant taking it then would receive the deliveries its
 * senders still post there. Deleting the workflow, or deploying it with another path, frees it.
 */
export async function pathHolder(q: Queryable, path: string, workflowId: string, workspaceId: string): Promise<string | undefined> {
  const rows = await q.query<{ workflow_id: string }>(
    `SELECT workflow_id FROM webhooks
      WHERE path = $1 AND workflow_id <> $2 AND (version_id IS NOT NULL OR workspace_id <> $3) LIMIT 1`,
    [path, workflowId, workspaceId]);
  return rows[0]?.workflow_id;
}

export async function saveWebhook(q: Queryable, w: WebhookRow): Promise<void> {
  await q.query(
    `INSERT INTO webhooks (${cols}) VALUES ($1, $2, $3, $4, $5, $6)
     ON CONFLICT (workflow_id) DO UPDATE SET block_id = EXCLUDED.block_id, path = EXCLUDED.path,
       generated_path = EXCLUDED.generated_path, version_id = EXCLUDED.version_id, updated_at = now()`,
    [w.workflow_id, w.workspace_id, w.block_id, w.path, w.generated_path, w.version_id],
  );
}

export async function deactivate(q: Queryable, workflowId: string): Promise<void> {
  await q.query('UPDATE webhooks SET version_id = NULL, updated_at = now() WHERE workflow_id = $1', [workflowId]);
}

/** Deployed triggers of some workflows (for their API data). */
export async function deployedFor(q: Queryable, workflowIds: readonly string[]): Promise<WebhookRow[]> {
  if (workflowIds.length === 0) return [];
  return q.query<WebhookRow>(`SELECT ${cols} FROM webhooks WHERE workflow_id = ANY($1::uuid[]) AND version_id IS NOT NULL`, [workflowIds]);
}

// -- delivery claims ----------------------------------------------------------------------------
//
// A claim, its stored answer and its release commit without waiting for the disk (src/db/async-commit.ts).
// None of them is what a sender is told: an answer goes out only after the run it reports was committed with
// a wait (an async run's acceptance, a sync run's record), which flushes the claim written before it. A
// stored answer lost in a crash leaves the claim unanswered: once its lease lapses, the next retry takes it
// over and answers from that run (`earlierRunAnswer`), as after a crash before the answer was stored. A
// release lost in a crash leaves the claim to lapse the same way. Lease renewals and hand-backs still wait:
// they are rare, and a renewal is what keeps another process from taking over a run still going.

/**
 * Claims a delivery key: inserts it, or takes over a claim that is past the retention or whose lease
 * expired before it was answered. Returns the delivery's creation time when this caller now holds it, and
 * whether it took over an earlier holder's claim of the same delivery (whose run may exist already).
 */
export async function claimDelivery(
  q: Queryable,
  c: { workspaceId: string; key: string; workflowId: string; token: string; leaseMs: number; retentionMs: number },
): Promise<{ createdAt: Date; takeover: boolean } | undefined> {
  const rows = await q.query<{ claim_token: string; created_at: Date; takeover: boolean }>(
    `WITH ${ASYNC_COMMIT}
     INSERT INTO webhook_deliveries (workspace_id, delivery_key, workflow_id, claim_token, lease_until)
     SELECT $1, $2, $3, $4, now() + $5::double precision * interval '1 millisecond' FROM ${ASYNC_COMMIT_NAME}
     ON CONFLICT (workspace_id, delivery_key) DO UPDATE SET
       workflow_id = EXCLUDED.workflow_id, claim_token = EXCLUDED.claim_token, lease_until = EXCLUDED.lease_until,
       execution_id = NULL, answer = NULL,
       -- A takeover keeps the delivery's identity (its run id derives from it); a forgotten one starts afresh.
       created_at = CASE WHEN webhook_deliveries.created_at < now() - $6::double precision * interval '1 millisecond'
                         THEN now() ELSE webhook_deliveries.created_at END
     WHERE webhook_deliveries.created_at < now() - $6::double precision * interval '1 millisecond'
        OR (webhook_deliveries.answer IS NULL AND webhook_deliveries.lease_until < now())
     RETURNING claim_token, created_at, created_at <> now() AS takeover`,
    [c.workspaceId, c.key, c.workflowId, c.token, c.leaseMs, c.retentionMs],
  );
  const row = rows[0];
  return row && row.claim_token === c.token ? { createdAt: row.created_at, takeover: row.takeover } : undefined;
}

export async function findDelivery(q: Queryable, workspaceId: string, key: string): Promise<DeliveryRow | undefined> {
  const rows = await q.query<DeliveryRow>(
    `SELECT workspace_id, delivery_key, workflow_id, claim_token, lease_until, execution_id, answer, created_at
       FROM webhook_deliveries WHERE workspace_id = $1 AND delivery_key = $2`, [workspaceId, key]);
  return rows[0];
}

/** Extends the lease of the claim this token holds; false when it holds it no more (taken over, or answered). */
export async function renewDelivery(q: Queryable, workspaceId: string, key: string, token: string, leaseMs: number): Promise<boolean> {
  const rows = await q.query(
    `UPDATE webhook_deliveries SET lease_until = now() + $4::double precision * interval '1 millisecond'
      WHERE workspace_id = $1 AND delivery_key = $2 AND claim_token = $3 AND answer IS NULL RETURNING 1`,
    [workspaceId, key, token, leaseMs]);
  return rows.length > 0;
}

/** Stores the answer (and the run it started) of the claim this token holds; false when another holder took it over. */
export async function answerDelivery(q: Queryable, workspaceId: string, key: string, token: string, answer: StoredAnswer, executionId: string | null): Promise<boolean> {
  const rows = await q.query(
    `WITH ${ASYNC_COMMIT}
     UPDATE webhook_deliveries SET answer = $4, execution_id = $5 FROM ${ASYNC_COMMIT_NAME}
      WHERE workspace_id = $1 AND delivery_key = $2 AND claim_token = $3 AND answer IS NULL RETURNING 1`,
    [workspaceId, key, token, JSON.stringify(answer), executionId]);
  return rows.length > 0;
}

/**
 * Ends the lease of a claim whose run may have started but whose answer is not stored: the row and its
 * creation time stay (the run's id derives from them), so the next retry takes it over at once and finds
 * that run instead of starting another.
 */
export async function handBackDelivery(q: Queryable, workspaceId: string, key: string, token: string): Promise<void> {
  await q.query(
    `UPDATE webhook_deliveries SET lease_until = now() - interval '1 millisecond'
      WHERE workspace_id = $1 AND delivery_key = $2 AND claim_token = $3 AND answer IS NULL`,
    [workspaceId, key, token]);
}

/** Drops a claim that started nothing (refused by limits, failed before its run could begin), so a retry may run. */
export async function releaseDelivery(q: Queryable, workspaceId: string, key: string, token: string): Promise<void> {
  await q.query(`WITH ${ASYNC_COMMIT} DELETE FROM webhook_deliveries USING ${ASYNC_COMMIT_NAME}
     WHERE workspace_id = $1 AND delivery_key = $2 AND claim_token = $3`, [workspaceId, key, token]);
}

export async function purgeDeliveries(q: Queryable, retentionMs: number): Promise<number> {
  const rows = await q.query(
    `DELETE FROM webhook_deliveries WHERE created_at < now() - $1::double precision * interval '1 millisecond' RETURNING 1`, [retentionMs]);
  return rows.length;
}

// -- uploaded files -----------------------------------------------------------------------------

export interface NewFile {
  id: string;
  workspaceId: string;
  workflowId: string;
  name: string;
  contentType: string;
  data: Buffer;
}

export async function insertFile(q: Queryable, f: NewFile): Promise<void> {
  await q.query(
    "INSERT INTO webhook_files (id, workspace_id, workflow_id, name, content_type, size, data) VALUES ($1, $2, $3, $4, $5, $6, decode($7, 'base64'))",
    [f.id, f.workspaceId, f.workflowId, f.name, f.contentType, f.data.length, blobParam(f.data)]);
}

/** Files stored for a delivery that was then refused before any run could see them. */
export async function deleteFiles(q: Queryable, workspaceId: string, ids: readonly string[]): Promise<void> {
  if (ids.length === 0) return;
  await q.query('DELETE FROM webhook_files WHERE workspace_id = $1 AND id = ANY($2::uuid[])', [workspaceId, ids]);
}

export async function findFile(q: Queryable, id: string): Promise<{ workspace_id: string; name: string; content_type: string; data: Uint8Array } | undefined> {
  const rows = await q.query<{ workspace_id: string; name: string; content_type: string; data: string }>(
    "SELECT workspace_id, name, content_type, encode(data, 'base64') AS data FROM webhook_files WHERE id = $1", [id]);
  const row = rows[0];
  return row && { ...row, data: blobFromText(row.data) };
}

/**
 * Deletes at most `batchSize` uploaded files older than `cutoff`, oldest first (the retention sweep: a delivery's
 * files go with its run's log); answers how many went.
 */
export function deleteFilesBefore(q: Queryable, cutoff: Date, batchSize: number): Promise<number> {
  return deleteOlderThan(q, 'webhook_files', 'created_at', cutoff, batchSize);
}

/** Bytes of a workspace's uploaded webhook files (`$1`: the workspace id; its storage source). */
export const FILE_BYTES_SQL = 'SELECT COALESCE(sum(size), 0) FROM webhook_files WHERE workspace_id = $1';
