// Workflows over the public API: CRUD, deploy, versions, rollback, status, execute (deployed or draft), and the
// definition's JSON Schema.
import { ApiError, apiData, apiFetch, apiRaw, errorMessage } from './client';

export interface BlockDef {
  id: string;
  type: string;
  name: string;
  config?: Record<string, unknown>;
  retry?: { maxAttempts: number; backoffMs?: number };
  blocks?: BlockDef[];
  /** Where the editor drew the block (kept in the definition; the engine ignores it). */
  position?: { x: number; y: number };
  /** A container's size on the canvas. */
  size?: { width: number; height: number };
  [extra: string]: unknown;
}

export interface EdgeDef { from: string; to: string; branch?: string; on?: 'error'; [extra: string]: unknown }

export interface Definition {
  name?: string;
  description?: string;
  variables?: Record<string, unknown>;
  blocks: BlockDef[];
  edges: EdgeDef[];
  [extra: string]: unknown;
}

export interface WorkflowSummary {
  id: string;
  workspaceId: string;
  name: string;
  description: string;
  isDeployed: boolean;
  deployedAt: string | null;
  version: number | null;
  createdAt: string;
  updatedAt: string;
  webhookUrl?: string;
  schedule?: { nextRunAt: string[]; enabled: boolean; disabledReason: string | null; consecutiveFailures: number };
}

export interface Workflow extends WorkflowSummary { definition: Definition }

export interface DeployState { id: string; isDeployed: boolean; deployedAt: string | null; version: number | null }

export interface WorkflowStatus { isDeployed: boolean; deployedAt: string | null; needsRedeployment: boolean; version: number | null }

/** One problem of a definition the server refused: `details` of its 400 answer. */
export interface DefinitionIssue { path?: (string | number)[]; message: string; blockId?: string; field?: string }

export const listWorkflows = async (workspaceId: string, cursor?: string) =>
  apiFetch<{ data: WorkflowSummary[]; nextCursor?: string }>('/api/v1/workflows', { query: { workspaceId, limit: 50, cursor } });

export const getWorkflow = (id: string) => apiData<{ workflow: Workflow }>(`/api/v1/workflows/${encodeURIComponent(id)}`).then((d) => d.workflow);

export const createWorkflow = (workspaceId: string, name: string, definition: Definition, description?: string) =>
  apiData<{ workflow: Workflow }>('/api/v1/workflows', { method: 'POST', body: { workspaceId, name, definition, ...(description ? { description } : {}) } }).then((d) => d.workflow);

export const saveWorkflow = (id: string, body: { name?: string; description?: string; definition: Definition }) =>
  apiData<{ workflow: Workflow }>(`/api/v1/workflows/${encodeURIComponent(id)}`, { method: 'PUT', body }).then((d) => d.workflow);

export const deleteWorkflow = (id: string) => apiData<{ id: string; deleted: true }>(`/api/v1/workflows/${encodeURIComponent(id)}`, { method: 'DELETE' });

export const deployWorkflow = (id: string) => apiData<DeployState>(`/api/v1/workflows/${encodeURIComponent(id)}/deploy`, { method: 'POST' });
export const undeployWorkflow = (id: string) => apiData<DeployState>(`/api/v1/workflows/${encodeURIComponent(id)}/deploy`, { method: 'DELETE' });
export const rollbackWorkflow = (id: string, version?: number) =>
  apiData<DeployState>(`/api/v1/workflows/${encodeURIComponent(id)}/rollback`, { method: 'POST', body: version === undefined ? {} : { version } });

/** A deployed version, as GET /api/v1/workflows/{id}/versions lists them (newest first). */
export interface WorkflowVersion {
  id: string;
  version: number;
  isActive: boolean;
  createdAt: string;
  /** The user who deployed it; null when a workspace key did. */
  deployedBy: string | null;
  blockCount: number;
  edgeCount: number;
}

export const listVersions = (id: string, cursor?: string) =>
  apiFetch<{ data: WorkflowVersion[]; nextCursor?: string }>(`/api/v1/workflows/${encodeURIComponent(id)}/versions`, { query: { limit: 20, cursor } });

export const workflowStatus = (id: string) => apiFetch<WorkflowStatus>(`/api/workflows/${encodeURIComponent(id)}/status`);

/** A sync run's answer as the caller sees it. `custom`: a Response block chose the status and body. */
export interface RunAnswer {
  httpStatus: number;
  executionId: string | null;
  custom: boolean;
  body: unknown;
}

/**
 * Runs synchronously: the deployed version, or with `draft` the saved draft (write role; not a deploy).
 * A failed run is an answer (with its error), not a throw.
 */
export async function executeWorkflow(id: string, inputs: Record<string, unknown>, opts: { draft?: boolean } = {}): Promise<RunAnswer> {
  const body = opts.draft ? { inputs, useDraftState: true } : { inputs };
  const res = await apiRaw(`/api/workflows/${encodeURIComponent(id)}/execute`, { method: 'POST', body });
  const envelope = res.body && typeof res.body === 'object' && 'executionId' in res.body ? (res.body as { executionId: unknown }) : null;
  if (!envelope && !res.headers.get('x-execution-id')) {
    // refused before any run started (not deployed, invalid draft, limits, no access)
    throw new ApiError(res.status, errorMessage(res.body, res.status), res.body);
  }
  return {
    httpStatus: res.status,
    executionId: envelope ? String(envelope.executionId) : res.headers.get('x-execution-id'),
    custom: !envelope,
    body: res.body,
  };
}

export const DEFINITION_SCHEMA_URL = '/api/v1/schemas/workflow-definition.json';

export const getDefinitionSchema = () => apiFetch<Record<string, unknown>>(DEFINITION_SCHEMA_URL, { allowUnauthorized: true });
