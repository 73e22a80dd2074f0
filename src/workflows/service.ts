import type { Database } from '../db/database.js';
import { uniqueViolation } from '../db/database.js';
import { recordAudit } from '../audit/store.js';
import { compile, validateDefinition, type CompiledGraph, type WorkflowDefinition } from '../engine/index.js';
import { HttpError } from '../http/errors.js';
import { isUuid, newId } from '../ids.js';
import * as store from './store.js';
import type { VersionRow, WorkflowRow } from './store.js';

export interface Actor { userId: string; keyId?: string }

export interface PublicWorkflow {
  id: string; workspaceId: string; name: string; description: string; definition: WorkflowDefinition;
  isDeployed: boolean; deployedAt: string | null; version: number | null; createdAt: string; updatedAt: string;
}

export const publicWorkflow = (w: WorkflowRow): PublicWorkflow => ({
  id: w.id,
  workspaceId: w.workspace_id,
  name: w.name,
  description: w.description,
  definition: w.definition,
  isDeployed: w.active_version_id !== null,
  deployedAt: w.deployed_at ? w.deployed_at.toISOString() : null,
  version: w.version,
  createdAt: w.created_at.toISOString(),
  updatedAt: w.updated_at.toISOString(),
});

/** Validates a definition; a 400 whose details name the block and field of each problem. */
export function checkDefinition(input: unknown): WorkflowDefinition {
  const result = validateDefinition(input);
  if (!result.ok) {
    const first = result.errors[0];
    throw new HttpError(400, `Invalid workflow definition: ${first?.message ?? 'invalid'}`, {
      details: result.errors.map((e) => ({
        path: ['definition', ...e.path],
        message: e.message,
        ...(e.blockId ? { blockId: e.blockId } : {}),
        ...(e.field ? { field: e.field } : {}),
      })),
    });
  }
  return result.definition;
}

export async function getWorkflow(db: Database, workspaceId: string, id: string): Promise<WorkflowRow> {
  const w = isUuid(id) ? await store.findWorkflow(db, workspaceId, id) : undefined;
  if (!w) throw new HttpError(404, 'Workflow not found');
  return w;
}

export async function createWorkflow(
  db: Database,
  workspaceId: string,
  input: { name: string; description?: string; definition: unknown },
  actor: Actor,
): Promise<WorkflowRow> {
  const definition = checkDefinition(input.definition);
  const id = newId();
  try {
    await db.tx(async (q) => {
      await store.insertWorkflow(q, { id, workspaceId, name: input.name, description: input.description ?? '', definition, createdBy: actor.userId });
      await recordAudit(q, {
        workspaceId, actorId: actor.userId, actorKeyId: actor.keyId, action: 'workflow.created',
        resourceType: 'workflow', resourceId: id, resourceName: input.name,
      });
    });
  } catch (err) {
    if (uniqueViolation(err)) throw new HttpError(409, `A workflow named "${input.name}" already exists in this workspace`);
    throw err;
  }
  return getWorkflow(db, workspaceId, id);
}

export async function updateWorkflow(
  db: Database,
  workspaceId: string,
  id: string,
  input: { name?: string; description?: string; definition: unknown },
  actor: Actor,
): Promise<WorkflowRow> {
  await getWorkflow(db, workspaceId, id);
  const definition = checkDefinition(input.definition);
  try {
    await db.tx(async (q) => {
      await store.updateWorkflow(q, workspaceId, id, { name: input.name, description: input.description, definition });
      await recordAudit(q, {
        workspaceId, actorId: actor.userId, actorKeyId: actor.keyId, action: 'workflow.updated',
        resourceType: 'workflow', resourceId: id, resourceName: input.name,
      });
    });
  } catch (err) {
    if (uniqueViolation(err)) throw new HttpError(409, `A workflow named "${input.name}" already exists in this workspace`);
    throw err;
  }
  forget(id);
  return getWorkflow(db, workspaceId, id);
}

export async function deleteWorkflow(db: Database, workspaceId: string, id: string, actor: Actor): Promise<void> {
  if (!isUuid(id)) throw new HttpError(404, 'Workflow not found');
  const deleted = await db.tx(async (q) => {
    const rows = await store.deleteWorkflow(q, workspaceId, id);
    if (rows[0]) {
      await recordAudit(q, {
        workspaceId, actorId: actor.userId, actorKeyId: actor.keyId, action: 'workflow.deleted',
        resourceType: 'workflow', resourceId: id, resourceName: rows[0].name,
      });
    }
    return rows[0];
  });
  forget(id);
  if (!deleted) throw new HttpError(404, 'Workflow not found');
}

/** Snapshots the draft as a new immutable version and activates it. */
export async function deployWorkflow(db: Database, workspaceId: string, id: string, actor: Actor): Promise<WorkflowRow> {
  const w = await getWorkflow(db, workspaceId, id);
  checkDefinition(w.definition);
  await db.tx(async (q) => {
    const locked = await store.lockWorkflow(q, workspaceId, id);
    if (!locked) throw new HttpError(404, 'Workflow not found');
    const version = await store.insertVersion(q, id, workspaceId, newId(), actor.userId);
    await store.activateVersion(q, id, version.id);
    await recordAudit(q, {
      workspaceId, actorId: actor.userId, actorKeyId: actor.keyId, action: 'workflow.deployed',
      resourceType: 'workflow', resourceId: id, resourceName: w.name, metadata: { version: version.version },
    });
  });
  forget(id);
  return getWorkflow(db, workspaceId, id);
}

export async function undeployWorkflow(db: Database, workspaceId: string, id: string, actor: Actor): Promise<WorkflowRow> {
  await db.tx(async (q) => {
    const locked = await store.lockWorkflow(q, workspaceId, id);
    if (!locked) throw new HttpError(404, 'Workflow not found');
    if (!locked.active_version_id) throw new HttpError(400, 'Workflow is not deployed');
    await store.activateVersion(q, id, null);
    await recordAudit(q, {
      workspaceId, actorId: actor.userId, actorKeyId: actor.keyId, action: 'workflow.undeployed',
      resourceType: 'workflow', resourceId: id, resourceName: locked.name,
    });
  });
  forget(id);
  return getWorkflow(db, workspaceId, id);
}

/** Activates an earlier version: the one given, or the one before the active version. */
export async function rollbackWorkflow(db: Database, workspaceId: string, id: string, version: number | undefined, actor: Actor): Promise<WorkflowRow> {
  await db.tx(async (q) => {
    const locked = await store.lockWorkflow(q, workspaceId, id);
    if (!locked) throw new HttpError(404, 'Workflow not found');
    if (!locked.active_version_id) throw new HttpError(400, 'Workflow is not deployed');
    const active = await store.findVersionById(q, locked.active_version_id);
    let target: VersionRow | undefined;
    if (version !== undefined) {
      target = await store.findVersion(q, id, version);
      if (!target) throw new HttpError(404, `Version ${version} not found`);
    } else {
      target = active ? await store.previousVersion(q, id, active.version) : undefined;
      if (!target) throw new HttpError(400, 'No previous deployment version to roll back to');
    }
    await store.activateVersion(q, id, target.id);
    await recordAudit(q, {
      workspaceId, actorId: actor.userId, actorKeyId: actor.keyId, action: 'workflow.rolled_back',
      resourceType: 'workflow', resourceId: id, resourceName: locked.name,
      metadata: { fromVersion: active?.version ?? null, toVersion: target.version },
    });
  });
  forget(id);
  return getWorkflow(db, workspaceId, id);
}

/**
 * Workflow rows for the execute path, kept for a second: a deploy in this process is seen at once
 * (the entry is dropped), one in another process within a second.
 */
const recent = new Map<string, { row: WorkflowRow; until: number }>();
const RECENT_MS = 1000;

export async function findWorkflowForRun(db: Database, id: string): Promise<WorkflowRow | undefined> {
  const hit = recent.get(id);
  if (hit && hit.until > Date.now()) return hit.row;
  const row = await store.findWorkflowAnyWorkspace(db, id);
  if (row) {
    if (recent.size > 10_000) recent.clear();
    recent.set(id, { row, until: Date.now() + RECENT_MS });
  } else {
    recent.delete(id);
  }
  return row;
}

function forget(id: string): void {
  recent.delete(id);
}

/** Compiled graphs of deployed versions; versions are immutable, so entries never go stale. */
const compiled = new Map<string, CompiledGraph>();

export function compileVersion(version: VersionRow): CompiledGraph {
  let graph = compiled.get(version.id);
  if (!graph) {
    graph = compile(version.definition);
    if (compiled.size > 1000) compiled.delete(compiled.keys().next().value as string);
    compiled.set(version.id, graph);
  }
  return graph;
}

/** The active deployed version of a workflow, or undefined when it is not deployed. */
export async function activeVersion(db: Database, w: WorkflowRow): Promise<VersionRow | undefined> {
  if (!w.active_version_id) return undefined;
  return loadVersion(db, w.active_version_id);
}

/** Deployed versions never change, so they are kept in memory once read. */
const versions = new Map<string, VersionRow>();

export async function loadVersion(db: Database, id: string): Promise<VersionRow | undefined> {
  const hit = versions.get(id);
  if (hit) return hit;
  const row = await store.findVersionById(db, id);
  if (row) {
    if (versions.size > 1000) versions.delete(versions.keys().next().value as string);
    versions.set(id, row);
  }
  return row;
}
