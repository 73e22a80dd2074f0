import type { Queryable } from '../db/database.js';
import type { WorkflowDefinition } from '../engine/index.js';

/**
 * A workflow without its draft definition: what lists, lookups, authorization and the execute path's cache
 * hold. A draft may be megabytes, so it is read only where it is used (WorkflowWithDefinition).
 */
export interface WorkflowRow {
  id: string; workspace_id: string; name: string; description: string;
  active_version_id: string | null; deployed_at: Date | null; created_by: string | null;
  created_at: Date; updated_at: Date;
  /** Joined: the active version's number. */
  version: number | null;
}

/** A workflow with its saved draft definition (get, create, update, deploy; draft runs read the draft alone). */
export interface WorkflowWithDefinition extends WorkflowRow {
  definition: WorkflowDefinition;
}

/**
 * A deployed version (version >= 1), or the snapshot of a draft that was run without deploying (version
 * <= -1: numbered downwards so it never takes a deployed number; never listed, activated or rolled back to).
 * A draft run's log and pause point refer to its snapshot like any run to its version.
 */
export interface VersionRow {
  id: string; workflow_id: string; workspace_id: string; version: number; definition: WorkflowDefinition; created_by: string | null; created_at: Date;
  /** What the version counts toward its workspace's storage (computed by the database: migration 0034). */
  stored_bytes: string;
}

/** Bytes a workspace's workflows store, drafts and deployed versions (one of the storage limit's sources). */
export const WORKSPACE_BYTES_SQL = 'SELECT COALESCE(sum(stored_bytes), 0) FROM workflows WHERE workspace_id = $1';

/** The columns of a WorkflowRow: every one but the draft definition. */
const rowColumns = (t: string) =>
  ['id', 'workspace_id', 'name', 'description', 'active_version_id', 'deployed_at', 'created_by', 'created_at', 'updated_at'].map((c) => `${t}.${c}`).join(', ');
const selectWorkflow = `SELECT ${rowColumns('w')}, v.version FROM workflows w LEFT JOIN workflow_versions v ON v.id = w.active_version_id`;

export const findWorkflow = (q: Queryable, workspaceId: string, id: string) =>
  q.query<WorkflowRow>(`${selectWorkflow} WHERE w.id = $1 AND w.workspace_id = $2`, [id, workspaceId]).then((r) => r[0]);

export const findWorkflowWithDefinition = (q: Queryable, workspaceId: string, id: string) =>
  q.query<WorkflowWithDefinition>(
    `SELECT ${rowColumns('w')}, w.definition, v.version FROM workflows w LEFT JOIN workflow_versions v ON v.id = w.active_version_id
      WHERE w.id = $1 AND w.workspace_id = $2`,
    [id, workspaceId],
  ).then((r) => r[0]);

/** The saved draft of a workflow alone (a draft run reads it fresh, never from a cached row). */
export const findDraftDefinition = (q: Queryable, workspaceId: string, id: string) =>
  q.query<{ definition: WorkflowDefinition }>('SELECT definition FROM workflows WHERE id = $1 AND workspace_id = $2', [id, workspaceId])
    .then((r) => r[0]?.definition);

/** Unscoped lookup: only to learn which workspace a workflow belongs to before authorizing. */
export const findWorkflowAnyWorkspace = (q: Queryable, id: string) =>
  q.query<WorkflowRow>(`${selectWorkflow} WHERE w.id = $1`, [id]).then((r) => r[0]);

/**
 * Whether the workflow's draft differs from its deployed version (false while not deployed), from the digests the
 * database keeps (migrations 0035 and 0036): neither definition is read.
 */
export const draftDiffersFromActive = (q: Queryable, workflowId: string) =>
  q.query<{ differs: boolean }>(
    `SELECT w.definition_md5 <> v.definition_md5 AS differs
       FROM workflows w JOIN workflow_versions v ON v.id = w.active_version_id WHERE w.id = $1`,
    [workflowId],
  ).then((r) => r[0]?.differs ?? false);

export const findWorkflowByName = (q: Queryable, workspaceId: string, name: string) =>
  q.query<WorkflowRow>(`${selectWorkflow} WHERE w.workspace_id = $1 AND w.name = $2`, [workspaceId, name]).then((r) => r[0]);

/** A page of a workspace's workflows, oldest first; `deployedOnly` keeps those with an active version. */
export async function listWorkflows(q: Queryable, workspaceId: string, limit: number, after?: { t: string; id: string }, deployedOnly = false) {
  const deployed = deployedOnly ? ' AND w.active_version_id IS NOT NULL' : '';
  if (after) {
    return q.query<WorkflowRow>(
      `${selectWorkflow} WHERE w.workspace_id = $1 AND (w.created_at, w.id) > ($2::timestamptz, $3::uuid)${deployed}
       ORDER BY w.created_at, w.id LIMIT $4`,
      [workspaceId, after.t, after.id, limit],
    );
  }
  return q.query<WorkflowRow>(`${selectWorkflow} WHERE w.workspace_id = $1${deployed} ORDER BY w.created_at, w.id LIMIT $2`, [workspaceId, limit]);
}

/** Names and descriptions of some of a workspace's workflows (those deleted since are absent). */
export const workflowNames = (q: Queryable, workspaceId: string, ids: readonly string[]) =>
  q.query<{ id: string; name: string; description: string }>(
    'SELECT id, name, description FROM workflows WHERE workspace_id = $1 AND id::text = ANY($2::text[])',
    [workspaceId, ids],
  );

export const insertWorkflow = (
  q: Queryable,
  w: { id: string; workspaceId: string; name: string; description: string; definition: WorkflowDefinition; createdBy: string | null },
) =>
  q.query<{ id: string; stored_bytes: string }>(
    `INSERT INTO workflows (id, workspace_id, name, description, definition, created_by)
     VALUES ($1, $2, $3, $4, $5, $6) RETURNING id, stored_bytes`,
    [w.id, w.workspaceId, w.name, w.description, JSON.stringify(w.definition), w.createdBy],
  );

export const updateWorkflow = (
  q: Queryable,
  workspaceId: string,
  id: string,
  patch: { name?: string; description?: string; definition: WorkflowDefinition },
) =>
  q.query<{ id: string; added_bytes: string }>(
    `WITH before AS (SELECT stored_bytes FROM workflows WHERE id = $1 AND workspace_id = $2 FOR UPDATE)
     UPDATE workflows SET definition = $3, name = COALESCE($4, name), description = COALESCE($5, description),
            updated_at = date_trunc('milliseconds', clock_timestamp())
      WHERE id = $1 AND workspace_id = $2 RETURNING id, stored_bytes - (SELECT stored_bytes FROM before) AS added_bytes`,
    [id, workspaceId, JSON.stringify(patch.definition), patch.name ?? null, patch.description ?? null],
  );

export const deleteWorkflow = (q: Queryable, workspaceId: string, id: string) =>
  q.query<{ id: string; name: string }>('DELETE FROM workflows WHERE id = $1 AND workspace_id = $2 RETURNING id, name', [id, workspaceId]);

/** Snapshots the draft as the next version number (row-locked so concurrent deploys get distinct numbers). */
/** A deployment's name and description (the deploy body's; migration 0037). */
export interface VersionLabel { name?: string | null; description?: string | null }

export async function insertVersion(
  q: Queryable, workflowId: string, workspaceId: string, id: string, createdBy: string | null, label: VersionLabel = {},
): Promise<VersionRow> {
  const rows = await q.query<VersionRow>(
    `INSERT INTO workflow_versions (id, workflow_id, workspace_id, version, definition, created_by, name, description)
     SELECT $1, w.id, w.workspace_id,
            COALESCE((SELECT max(version) FROM workflow_versions WHERE workflow_id = w.id AND version > 0), 0) + 1,
            w.definition, $4, $5, $6
       FROM workflows w WHERE w.id = $2 AND w.workspace_id = $3
     RETURNING *`,
    [id, workflowId, workspaceId, createdBy, label.name ?? null, label.description ?? null],
  );
  return rows[0];
}

export const lockWorkflow = (q: Queryable, workspaceId: string, id: string) =>
  q.query<WorkflowRow>(`SELECT ${rowColumns('w')}, NULL::int AS version FROM workflows w WHERE w.id = $1 AND w.workspace_id = $2 FOR UPDATE`, [id, workspaceId])
    .then((r) => r[0]);

export const activateVersion = (q: Queryable, workflowId: string, versionId: string | null) =>
  q.query(
    `UPDATE workflows SET active_version_id = $2,
            deployed_at = CASE WHEN $2::uuid IS NULL THEN NULL ELSE date_trunc('milliseconds', clock_timestamp()) END
      WHERE id = $1`,
    [workflowId, versionId],
  );

export const findVersion = (q: Queryable, workflowId: string, version: number) =>
  q.query<VersionRow>('SELECT * FROM workflow_versions WHERE workflow_id = $1 AND version = $2 AND version > 0', [workflowId, version]).then((r) => r[0]);

export const findVersionById = (q: Queryable, id: string) =>
  q.query<VersionRow>('SELECT * FROM workflow_versions WHERE id = $1', [id]).then((r) => r[0]);

export const previousVersion = (q: Queryable, workflowId: string, before: number) =>
  q.query<VersionRow>(
    'SELECT * FROM workflow_versions WHERE workflow_id = $1 AND version < $2 AND version > 0 ORDER BY version DESC LIMIT 1',
    [workflowId, before],
  ).then((r) => r[0]);

/** Deployed versions of a workflow, newest first (keyset on the version number). */
/** What the versions list shows of a version: never its definition (up to 2 MB each, a hundred a page). */
export interface VersionSummaryRow {
  id: string; version: number; created_by: string | null; created_at: Date; name: string | null; description: string | null;
  /** Kept by the database (migration 0035): every block, nested ones included, and the edges. */
  block_count: number; edge_count: number;
}

export const listVersions = (q: Queryable, workflowId: string, limit: number, beforeVersion?: number) =>
  q.query<VersionSummaryRow>(
    `SELECT id, version, created_by, created_at, name, description, block_count, edge_count FROM workflow_versions
      WHERE workflow_id = $1 AND version > 0 AND version < $2 ORDER BY version DESC LIMIT $3`,
    [workflowId, beforeVersion ?? 2_147_483_647, limit],
  );

/**
 * Stores a draft snapshot under its content id (call with the workflow row locked, so two snapshots never
 * take the same number); a snapshot already stored is kept.
 */
export const insertDraftSnapshot = (
  q: Queryable,
  s: { id: string; workflowId: string; workspaceId: string; definition: WorkflowDefinition; createdBy: string | null },
) =>
  q.query(
    `INSERT INTO workflow_versions (id, workflow_id, workspace_id, version, definition, created_by)
     VALUES ($1, $2, $3, (SELECT COALESCE(min(version), 0) - 1 FROM workflow_versions WHERE workflow_id = $2 AND version < 0), $4, $5)
     ON CONFLICT (id) DO NOTHING`,
    [s.id, s.workflowId, s.workspaceId, JSON.stringify(s.definition), s.createdBy],
  );

/** Deployed workflows whose active version's definition text mentions `name` (callers confirm the reference). */
export const activeDefinitionsMentioning = (q: Queryable, workspaceId: string, name: string) =>
  q.query<{ id: string; name: string; definition: WorkflowDefinition }>(
    `SELECT w.id, w.name, v.definition FROM workflows w JOIN workflow_versions v ON v.id = w.active_version_id
      WHERE w.workspace_id = $1 AND strpos(v.definition::text, $2) > 0 ORDER BY w.name`,
    [workspaceId, name],
  );
