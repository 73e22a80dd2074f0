import { createHash } from 'node:crypto';
import type { AccessControlled, Actor, Role, WorkspaceAccess } from '../accounts/service.js';
import type { AuthContext } from '../http/auth.js';
import type { Database, Queryable } from '../db/database.js';
import { uniqueViolation } from '../db/database.js';
import { recordAudit } from '../audit/audit-log.js';
import { compile, secretReferences, validateDefinition, type CompiledGraph, type WorkflowDefinition } from '../engine/index.js';
import { measureJson } from '../engine/json-size.js';
import { HttpError } from '../http/errors.js';
import { isUuid, newId } from '../ids.js';
import type { StorageGuard, StorageSource } from '../limits/storage.js';
import { BoundedCache, type CacheSize } from './bounded-cache.js';
import * as store from './store.js';
import type { VersionRow, VersionSummaryRow, WorkflowRow, WorkflowWithDefinition } from './store.js';

export type { VersionRow, VersionSummaryRow, WorkflowRow, WorkflowWithDefinition } from './store.js';

/** Default of WEFT_MAX_DEFINITION_BYTES: the JSON size of one workflow definition. */
export const DEFAULT_MAX_DEFINITION_BYTES = 2 * 1024 * 1024;

/** Bounds of the in-memory caches (docs/architecture.md, Where limits are enforced). */
export const WORKFLOW_CACHE_BOUNDS = {
  rows: { maxEntries: 10_000, maxBytes: 8 * 1024 * 1024, ttlMs: 1000 },
  versions: { maxEntries: 1000, maxBytes: 32 * 1024 * 1024 },
  compiled: { maxEntries: 1000, maxBytes: 32 * 1024 * 1024 },
} as const;

export interface PublicWorkflow {
  id: string; workspaceId: string; name: string; description: string; definition: WorkflowDefinition;
  isDeployed: boolean; deployedAt: string | null; version: number | null; createdAt: string; updatedAt: string;
}

export type PublicWorkflowSummary = Omit<PublicWorkflow, 'definition'>;

/** A workflow as lists and deployment answers show it: everything but the draft definition. */
export const workflowSummary = (w: WorkflowRow): PublicWorkflowSummary => ({
  id: w.id,
  workspaceId: w.workspace_id,
  name: w.name,
  description: w.description,
  isDeployed: w.active_version_id !== null,
  deployedAt: w.deployed_at ? w.deployed_at.toISOString() : null,
  version: w.version,
  createdAt: w.created_at.toISOString(),
  updatedAt: w.updated_at.toISOString(),
});

export const publicWorkflow = (w: WorkflowWithDefinition): PublicWorkflow => {
  const { id, workspaceId, name, description, ...rest } = workflowSummary(w);
  return { id, workspaceId, name, description, definition: w.definition, ...rest };
};

/** Sizes of the service's caches, for tests and metrics. */
export interface WorkflowCacheSizes {
  rows: CacheSize;
  versions: CacheSize;
  compiled: CacheSize;
}

/**
 * Told inside the deploy, undeploy or rollback transaction which version is now active (null: none).
 * Throwing refuses the change (e.g. a webhook path held by another workflow).
 */
export type DeploymentListener = (q: Queryable, change: { workspaceId: string; workflowId: string; version: VersionRow | null }) => Promise<void>;

/** Options of definition checks: the blocks cap and the code syntax checker (from the sandbox). */
export type DefinitionChecks = NonNullable<Parameters<typeof validateDefinition>[1]> & {
  /** The names of a workspace's secrets (the secrets service's): `{{NAME}}` references are checked on save. */
  secretNames?: (workspaceId: string) => Promise<ReadonlySet<string>>;
  /** UTF-8 bytes of a definition's JSON text (WEFT_MAX_DEFINITION_BYTES); more is a 413. */
  maxDefinitionBytes?: number;
  /** The workspace's storage limit: drafts and every deployed version count toward it (migration 0034). */
  storage?: StorageGuard;
};

/** Bytes a workspace's workflows store, drafts and deployed versions (one of the storage limit's sources). */
export const workflowStorageBytes: StorageSource = { sql: store.WORKSPACE_BYTES_SQL };

/** Workflows: definitions, immutable deployed versions, and the cached lookups of the execute path. */
export class WorkflowService {
  constructor(
    private readonly db: Database,
    private readonly accounts: AccessControlled,
    private readonly definitionOptions: DefinitionChecks = {},
    private readonly onDeploymentChanged: DeploymentListener = async () => undefined,
    /** Checks of a saved definition that depend on its workspace (the plan's minimum schedule interval). */
    private readonly checkForWorkspace: (workspaceId: string, definition: WorkflowDefinition) => Promise<void> = async () => undefined,
  ) {}

  /**
   * Loads a workflow for a caller: another workspace's workflow, or one the key cannot reach, is
   * answered like a missing one (404). `forRun` uses the execute path's short-lived cache.
   */
  async forCaller(auth: AuthContext | undefined, id: string, role: Role, opts: { forRun?: boolean } = {}): Promise<{ access: WorkspaceAccess; workflow: WorkflowRow }> {
    const workflow = !isUuid(id) ? undefined : opts.forRun ? await this.findWorkflowForRun(id) : await store.findWorkflowAnyWorkspace(this.db, id);
    if (!workflow) throw new HttpError(404, 'Workflow not found');
    const access = await this.accounts.authorize(auth, workflow.workspace_id, role, { conceal: true, notFoundMessage: 'Workflow not found' });
    return { access, workflow };
  }

  /** Workflows of a workspace, oldest first (keyset pagination); `deployedOnly`: those deployed. */
  list(workspaceId: string, limit: number, after?: { t: string; id: string }, deployedOnly = false): Promise<WorkflowRow[]> {
    return store.listWorkflows(this.db, workspaceId, limit, after, deployedOnly);
  }

  /** Names and descriptions of some of a workspace's workflows, by id (deleted ones are absent). */
  async names(workspaceId: string, ids: readonly string[]): Promise<Map<string, { name: string; description: string }>> {
    const unique = [...new Set(ids)];
    const rows = unique.length ? await store.workflowNames(this.db, workspaceId, unique) : [];
    return new Map(rows.map((r) => [r.id, { name: r.name, description: r.description }]));
  }

  findByName(workspaceId: string, name: string): Promise<WorkflowRow | undefined> {
    return store.findWorkflowByName(this.db, workspaceId, name);
  }

  /** A workflow of the workspace, for a run's child workflow block: undefined when missing. */
  async findInWorkspace(workspaceId: string, id: string): Promise<WorkflowRow | undefined> {
    return isUuid(id) ? store.findWorkflow(this.db, workspaceId, id) : undefined;
  }

  /** Validates a definition; a 400 whose details name the block and field of each problem. */
  checkDefinition(input: unknown, knownSecrets?: ReadonlySet<string>): WorkflowDefinition {
    const result = validateDefinition(input, { ...this.definitionOptions, knownSecrets });
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

  /** The workspace's secret names when the definition may reference one (it holds `{{`); undefined otherwise. */
  private async knownSecrets(workspaceId: string, input: unknown): Promise<ReadonlySet<string> | undefined> {
    const names = this.definitionOptions.secretNames;
    if (!names || !JSON.stringify(input ?? null).includes('{{')) return undefined;
    return names(workspaceId);
  }

  /** Saved-definition check: its size, its own checks, and its secret references against the workspace's secrets. */
  private async checkSaved(workspaceId: string, input: unknown): Promise<WorkflowDefinition> {
    this.checkSize(input);
    return this.checkDefinition(input, await this.knownSecrets(workspaceId, input));
  }

  /**
   * A 413 when the definition's JSON text is over WEFT_MAX_DEFINITION_BYTES. Checked on the definition, not
   * the body (the body limit is larger), before anything else reads it; measured without building the text.
   */
  private checkSize(input: unknown): void {
    const limit = this.definitionOptions.maxDefinitionBytes ?? DEFAULT_MAX_DEFINITION_BYTES;
    if (measureJson(input, limit).bytes > limit) {
      throw new HttpError(413, `Workflow definition exceeds the maximum allowed size of ${limit} bytes of JSON`);
    }
  }

  /** Deployed workflows of a workspace whose active version references the secret `name`. */
  async deployedUsingSecret(workspaceId: string, name: string): Promise<{ id: string; name: string }[]> {
    const rows = await store.activeDefinitionsMentioning(this.db, workspaceId, name);
    return rows.filter((r) => secretReferences(r.definition).has(name)).map((r) => ({ id: r.id, name: r.name }));
  }

  /** A workflow with its draft definition; 404 when missing. */
  async getWorkflow(workspaceId: string, id: string): Promise<WorkflowWithDefinition> {
    const w = isUuid(id) ? await store.findWorkflowWithDefinition(this.db, workspaceId, id) : undefined;
    if (!w) throw new HttpError(404, 'Workflow not found');
    return w;
  }

  /** A workflow without its draft (deployment changes answer with the row alone); 404 when missing. */
  private async getRow(workspaceId: string, id: string): Promise<WorkflowRow> {
    const w = isUuid(id) ? await store.findWorkflow(this.db, workspaceId, id) : undefined;
    if (!w) throw new HttpError(404, 'Workflow not found');
    return w;
  }

  async createWorkflow(
    workspaceId: string,
    input: { name: string; description?: string; definition: unknown },
    actor: Actor,
  ): Promise<WorkflowWithDefinition> {
    const definition = await this.checkSaved(workspaceId, input.definition);
    await this.checkForWorkspace(workspaceId, definition);
    const id = newId();
    try {
      await this.db.tx(async (q) => {
        const [row] = await store.insertWorkflow(q, { id, workspaceId, name: input.name, description: input.description ?? '', definition, createdBy: actor.userId ?? null });
        await this.definitionOptions.storage?.checkAfterWrite(q, workspaceId, Number(row.stored_bytes));
        await recordAudit(q, {
          workspaceId, actorId: actor.userId ?? null, actorKeyId: actor.keyId ?? null, actorType: actor.type, action: 'workflow.created',
          resourceType: 'workflow', resourceId: id, resourceName: input.name,
        });
      });
    } catch (err) {
      if (uniqueViolation(err)) throw new HttpError(409, `A workflow named "${input.name}" already exists in this workspace`);
      throw err;
    }
    return this.getWorkflow(workspaceId, id);
  }

  async updateWorkflow(
    workspaceId: string,
    id: string,
    input: { name?: string; description?: string; definition: unknown },
    actor: Actor,
  ): Promise<WorkflowWithDefinition> {
    await this.getRow(workspaceId, id);
    const definition = await this.checkSaved(workspaceId, input.definition);
    await this.checkForWorkspace(workspaceId, definition);
    try {
      await this.db.tx(async (q) => {
        const [row] = await store.updateWorkflow(q, workspaceId, id, { name: input.name, description: input.description, definition });
        if (row) await this.definitionOptions.storage?.checkAfterWrite(q, workspaceId, Number(row.added_bytes));
        await recordAudit(q, {
          workspaceId, actorId: actor.userId ?? null, actorKeyId: actor.keyId ?? null, actorType: actor.type, action: 'workflow.updated',
          resourceType: 'workflow', resourceId: id, resourceName: input.name,
        });
      });
    } catch (err) {
      if (uniqueViolation(err)) throw new HttpError(409, `A workflow named "${input.name}" already exists in this workspace`);
      throw err;
    }
    this.forget(id);
    return this.getWorkflow(workspaceId, id);
  }

  async deleteWorkflow(workspaceId: string, id: string, actor: Actor): Promise<void> {
    if (!isUuid(id)) throw new HttpError(404, 'Workflow not found');
    const deleted = await this.db.tx(async (q) => {
      const rows = await store.deleteWorkflow(q, workspaceId, id);
      if (rows[0]) {
        await recordAudit(q, {
          workspaceId, actorId: actor.userId ?? null, actorKeyId: actor.keyId ?? null, actorType: actor.type, action: 'workflow.deleted',
          resourceType: 'workflow', resourceId: id, resourceName: rows[0].name,
        });
      }
      return rows[0];
    });
    this.forget(id);
    if (!deleted) throw new HttpError(404, 'Workflow not found');
  }

  /** Snapshots the draft as a new immutable version and activates it. */
  /** `label`: the deployment's name and description, kept with its version. */
  async deployWorkflow(workspaceId: string, id: string, actor: Actor, label: store.VersionLabel = {}): Promise<WorkflowWithDefinition> {
    const w = await this.getWorkflow(workspaceId, id);
    await this.checkSaved(workspaceId, w.definition);
    await this.db.tx(async (q) => {
      const locked = await store.lockWorkflow(q, workspaceId, id);
      if (!locked) throw new HttpError(404, 'Workflow not found');
      const version = await store.insertVersion(q, id, workspaceId, newId(), actor.userId ?? null, label);
      // A version is a copy of the draft kept for good, with its label (the trigger of migrations 0034 and 0037
      // adds them to the workflow's size).
      const labelBytes = Buffer.byteLength(label.name ?? '') + Buffer.byteLength(label.description ?? '');
      await this.definitionOptions.storage?.checkAfterWrite(q, workspaceId, Number(version.stored_bytes) + labelBytes);
      await store.activateVersion(q, id, version.id);
      await this.onDeploymentChanged(q, { workspaceId, workflowId: id, version });
      await recordAudit(q, {
        workspaceId, actorId: actor.userId ?? null, actorKeyId: actor.keyId ?? null, actorType: actor.type, action: 'workflow.deployed',
        resourceType: 'workflow', resourceId: id, resourceName: w.name, metadata: { version: version.version },
      });
    });
    this.forget(id);
    return this.getWorkflow(workspaceId, id);
  }

  async undeployWorkflow(workspaceId: string, id: string, actor: Actor): Promise<WorkflowRow> {
    await this.db.tx(async (q) => {
      const locked = await store.lockWorkflow(q, workspaceId, id);
      if (!locked) throw new HttpError(404, 'Workflow not found');
      if (!locked.active_version_id) throw new HttpError(400, 'Workflow is not deployed');
      await store.activateVersion(q, id, null);
      await this.onDeploymentChanged(q, { workspaceId, workflowId: id, version: null });
      await recordAudit(q, {
        workspaceId, actorId: actor.userId ?? null, actorKeyId: actor.keyId ?? null, actorType: actor.type, action: 'workflow.undeployed',
        resourceType: 'workflow', resourceId: id, resourceName: locked.name,
      });
    });
    this.forget(id);
    return this.getRow(workspaceId, id);
  }

  /** Activates an earlier version: the one given, or the one before the active version. */
  async rollbackWorkflow(workspaceId: string, id: string, version: number | undefined, actor: Actor): Promise<WorkflowRow> {
    await this.db.tx(async (q) => {
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
      await this.onDeploymentChanged(q, { workspaceId, workflowId: id, version: target });
      await recordAudit(q, {
        workspaceId, actorId: actor.userId ?? null, actorKeyId: actor.keyId ?? null, actorType: actor.type, action: 'workflow.rolled_back',
        resourceType: 'workflow', resourceId: id, resourceName: locked.name,
        metadata: { fromVersion: active?.version ?? null, toVersion: target.version },
      });
    });
    this.forget(id);
    return this.getRow(workspaceId, id);
  }

  /** Deployed versions of a workflow, newest first (draft snapshots are not versions). */
  listVersions(workflowId: string, limit: number, beforeVersion?: number): Promise<VersionSummaryRow[]> {
    return store.listVersions(this.db, workflowId, limit, beforeVersion);
  }

  /**
   * The saved draft as something the run service can run like a version, without deploying it: checked
   * like a deploy (a 400 naming the block), then stored once per distinct draft as a snapshot (see
   * VersionRow) under an id derived from its content, so a run that pauses can be resumed by any process
   * and repeated runs of an unchanged draft reuse one snapshot and its compiled graph. The draft is read here,
   * fresh (rows carry none); one over the size limit (saved before it, or under a larger one) is a 413.
   */
  async draftVersion(workflow: WorkflowRow, actor: Actor): Promise<VersionRow> {
    const definition = await store.findDraftDefinition(this.db, workflow.workspace_id, workflow.id);
    if (!definition) throw new HttpError(404, 'Workflow not found');
    this.checkSize(definition);
    this.checkDefinition(definition);
    const id = draftSnapshotId(workflow.id, definition);
    const known = await this.loadVersion(id);
    if (known) return known;
    await this.db.tx(async (q) => {
      // Locked so concurrent snapshots of different drafts take distinct numbers.
      if (!(await store.lockWorkflow(q, workflow.workspace_id, workflow.id))) throw new HttpError(404, 'Workflow not found');
      await store.insertDraftSnapshot(q, {
        id, workflowId: workflow.id, workspaceId: workflow.workspace_id, definition, createdBy: actor.userId ?? null,
      });
    });
    const stored = await this.loadVersion(id);
    if (!stored) throw new HttpError(404, 'Workflow not found');
    return stored;
  }

  /**
   * Workflow rows for the execute path, kept for a second: a deploy in this process is seen at once
   * (the entry is dropped), one in another process within a second. Rows carry no draft, and the cache is
   * bounded by bytes too (a description may be 10,000 characters).
   */
  private readonly recent = new BoundedCache<WorkflowRow>(WORKFLOW_CACHE_BOUNDS.rows);

  async findWorkflowForRun(id: string): Promise<WorkflowRow | undefined> {
    const hit = this.recent.get(id);
    if (hit) return hit;
    const row = await store.findWorkflowAnyWorkspace(this.db, id);
    if (row) this.recent.set(id, row, jsonBytes(row));
    else this.recent.delete(id);
    return row;
  }

  /** Entries and bytes each cache holds. */
  cacheSizes(): WorkflowCacheSizes {
    return { rows: this.recent.size(), versions: this.versions.size(), compiled: this.compiled.size() };
  }

  private forget(id: string): void {
    this.recent.delete(id);
  }

  /**
   * Compiled graphs of deployed versions and draft snapshots; versions are immutable, so entries never go
   * stale. A graph holds its definition's blocks, so it is counted at its definition's size.
   */
  private readonly compiled = new BoundedCache<CompiledGraph>(WORKFLOW_CACHE_BOUNDS.compiled);

  compileVersion(version: VersionRow): CompiledGraph {
    let graph = this.compiled.get(version.id);
    if (!graph) {
      graph = compile(version.definition);
      this.compiled.set(version.id, graph, jsonBytes(version.definition));
    }
    return graph;
  }

  /** The active deployed version of a workflow, or undefined when it is not deployed. */
  async activeVersion(w: WorkflowRow): Promise<VersionRow | undefined> {
    if (!w.active_version_id) return undefined;
    return this.loadVersion(w.active_version_id);
  }

  /** True when the saved draft differs from the active deployed version (by digest); false while not deployed. */
  needsRedeployment(w: WorkflowRow): Promise<boolean> {
    return w.active_version_id === null ? Promise.resolve(false) : store.draftDiffersFromActive(this.db, w.id);
  }

  /** Deployed versions (and draft snapshots) never change, so they are kept in memory once read, within bounds. */
  private readonly versions = new BoundedCache<VersionRow>(WORKFLOW_CACHE_BOUNDS.versions);

  async loadVersion(id: string): Promise<VersionRow | undefined> {
    const hit = this.versions.get(id);
    if (hit) return hit;
    const row = await store.findVersionById(this.db, id);
    if (row) this.versions.set(id, row, jsonBytes(row));
    return row;
  }
}

/** A cached value's size: the UTF-8 length of its JSON, measured once when it is inserted. */
const jsonBytes = (value: unknown): number => measureJson(value, Number.MAX_SAFE_INTEGER).bytes;

/** A UUID-shaped id from a draft's content (SHA-256 of the workflow id and the canonical definition). */
function draftSnapshotId(workflowId: string, definition: WorkflowDefinition): string {
  const h = createHash('sha256').update(`${workflowId}\n${canonicalJson(definition)}`).digest('hex');
  // Version nibble 8 (custom) and the RFC 4122 variant, so it reads as the UUID it is stored as.
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-8${h.slice(13, 16)}-${((parseInt(h[16], 16) & 0x3) | 0x8).toString(16)}${h.slice(17, 20)}-${h.slice(20, 32)}`;
}

/** JSON with object keys sorted, so two equal definitions compare equal whatever their key order. */
function canonicalJson(value: unknown): string {
  return JSON.stringify(value, (_k, v: unknown) => (v && typeof v === 'object' && !Array.isArray(v)
    ? Object.fromEntries(Object.entries(v as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
    : v));
}
