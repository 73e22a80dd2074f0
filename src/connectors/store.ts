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

/** Connectors without their documents, oldest first. */
export const listConnectors = (q: Queryable, workspaceId: string) =>
  q.query<Omit<ConnectorRow, 'spec'>>(
    'SELECT id, workspace_id, name, base_url, operations, auth, created_at, updated_at FROM connectors WHERE workspace_id = $1 ORDER BY created_at, id LIMIT 500',
    [workspaceId],
  );

export const deleteConnector = (q: Queryable, workspaceId: string, id: string) =>
  q.query<{ id: string }>('DELETE FROM connectors WHERE workspace_id = $1 AND id = $2 RETURNING id', [workspaceId, id]).then((r) => r.length > 0);
