// SQL of the connectors area. Every query is scoped by workspace: another workspace's connector is
// never found (docs/architecture.md, Tenancy).
import type { Queryable } from '../db/database.js';
import type { ConnectorOperation } from './openapi.js';
import type { ConnectorAuth } from './requests.js';

export interface ConnectorRow {
  id: string;
  workspace_id: string;
  name: string;
  base_url: string;
  spec: Record<string, unknown>;
  operations: ConnectorOperation[];
  auth: ConnectorAuth | null;
  created_at: Date;
  updated_at: Date;
  /** What the connector counts toward its workspace's storage (computed by the database: migration 0033). */
  stored_bytes: string;
}

export interface ConnectorValues {
  name: string;
  baseUrl: string;
  spec: Record<string, unknown>;
  operations: ConnectorOperation[];
  auth: ConnectorAuth | null;
}

export async function insertConnector(q: Queryable, id: string, workspaceId: string, v: ConnectorValues, createdBy: string | null): Promise<ConnectorRow> {
  const rows = await q.query<ConnectorRow>(
    `INSERT INTO connectors (id, workspace_id, name, base_url, spec, operations, auth, created_by)
     VALUES ($1, $2, $3, $4, $5::jsonb, $6::jsonb, $7::jsonb, $8) RETURNING *`,
    [id, workspaceId, v.name, v.baseUrl, JSON.stringify(v.spec), JSON.stringify(v.operations), v.auth ? JSON.stringify(v.auth) : null, createdBy],
  );
  return rows[0];
}

export async function updateConnector(q: Queryable, workspaceId: string, id: string, v: ConnectorValues): Promise<ConnectorRow | undefined> {
  const rows = await q.query<ConnectorRow>(
    `UPDATE connectors SET name = $3, base_url = $4, spec = $5::jsonb, operations = $6::jsonb, auth = $7::jsonb,
       updated_at = date_trunc('milliseconds', clock_timestamp())
     WHERE workspace_id = $1 AND id = $2 RETURNING *`,
    [workspaceId, id, v.name, v.baseUrl, JSON.stringify(v.spec), JSON.stringify(v.operations), v.auth ? JSON.stringify(v.auth) : null],
  );
  return rows[0];
}

export const findConnector = (q: Queryable, workspaceId: string, id: string) =>
  q.query<ConnectorRow>('SELECT * FROM connectors WHERE workspace_id = $1 AND id = $2', [workspaceId, id]).then((r) => r[0]);

/** The workspace a connector belongs to (routes authorize the caller against it). */
export const connectorWorkspace = (q: Queryable, id: string) =>
  q.query<{ workspace_id: string }>('SELECT workspace_id FROM connectors WHERE id = $1', [id]).then((r) => r[0]?.workspace_id);

/** Bytes a workspace's connectors store (one of the storage limit's sources). */
export const WORKSPACE_BYTES_SQL = 'SELECT COALESCE(sum(stored_bytes), 0) FROM connectors WHERE workspace_id = $1';

/** The stored size of one connector (before a replacement, to count only what it adds). */
export const connectorBytes = (q: Queryable, workspaceId: string, id: string) =>
  q.query<{ stored_bytes: string }>('SELECT stored_bytes FROM connectors WHERE workspace_id = $1 AND id = $2', [workspaceId, id])
    .then((r) => (r[0] ? Number(r[0].stored_bytes) : undefined));

/**
 * A page of connectors without their documents, oldest first, after `after`: at most `limit`, and no more than
 * `maxBytes` of stored size (at least one). The page is chosen on the sizes alone, so only its own operations are
 * read: one answer holding every connector of a workspace could have been gigabytes. `considered`: how many
 * connectors the sizes were read of (up to `limit`), so more than the rows returned means the size cut the page.
 */
export const listConnectors = (q: Queryable, workspaceId: string, opts: { limit: number; maxBytes: number; after?: { t: string; id: string } }) =>
  q.query<Omit<ConnectorRow, 'spec'> & { considered: number }>(
    `WITH sized AS (
       SELECT id, created_at, sum(stored_bytes) OVER (ORDER BY created_at, id) - stored_bytes AS bytes_before
         FROM connectors
        WHERE workspace_id = $1 AND ($4::timestamptz IS NULL OR (created_at, id) > ($4::timestamptz, $5::uuid))
        ORDER BY created_at, id LIMIT $2
     )
     SELECT c.id, c.workspace_id, c.name, c.base_url, c.operations, c.auth, c.created_at, c.updated_at, c.stored_bytes,
            (SELECT count(*)::int FROM sized) AS considered
       FROM sized s JOIN connectors c ON c.id = s.id
      WHERE s.bytes_before = 0 OR s.bytes_before < $3
      ORDER BY c.created_at, c.id`,
    [workspaceId, opts.limit, opts.maxBytes, opts.after?.t ?? null, opts.after?.id ?? null],
  );

export const deleteConnector = (q: Queryable, workspaceId: string, id: string) =>
  q.query<{ id: string }>('DELETE FROM connectors WHERE workspace_id = $1 AND id = $2 RETURNING id', [workspaceId, id]).then((r) => r.length > 0);
