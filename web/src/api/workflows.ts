// Workflows over the public API: CRUD, deploy, versions, rollback, status, execute (deployed or draft), and the
// definition's JSON Schema.
import { ApiError, api, apiFetch, apiRaw, errorMessage } from './client';
import type { DataOf, RequestBody, Success } from './schema';

// The definition is the editor's own model: the server publishes it as an open object (blocks keep extra
// fields such as the canvas position), so its shape is declared here; everything around it is generated.

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

type WorkflowRecord = DataOf<'/api/v1/workflows/{id}'>['workflow'];
export type WorkflowSummary = DataOf<'/api/v1/workflows'>[number];
export type Workflow = Omit<WorkflowRecord, 'definition'> & { definition: Definition };
export type DeployState = DataOf<'/api/v1/workflows/{id}/deploy', 'post'>;
export type WorkflowStatus = Success<'/api/workflows/{id}/status'>;
type DefinitionBody = RequestBody<'/api/v1/workflows', 'post'>['definition'];

/** The editor's definition as the request body takes it (blocks without a config get the server's default). */
const asBody = (definition: Definition) => definition as DefinitionBody;
const withDefinition = (w: WorkflowRecord): Workflow => ({ ...w, definition: w.definition as Definition });

/** One problem of a definition the server refused: `details` of its 400 answer. */
export interface DefinitionIssue { path?: (string | number)[]; message: string; blockId?: string; field?: string }

export const listWorkflows = async (workspaceId: string, cursor?: string) =>
  api('/api/v1/workflows', { query: { workspaceId, limit: 50, cursor } });

export const getWorkflow = (id: string) => api('/api/v1/workflows/{id}', { params: { id } }).then((r) => withDefinition(r.data.workflow));

export const createWorkflow = (workspaceId: string, name: string, definition: Definition, description?: string) =>
  api('/api/v1/workflows', { method: 'post', body: { workspaceId, name, definition: asBody(definition), ...(description ? { description } : {}) } })
    .then((r) => withDefinition(r.data.workflow));

export const saveWorkflow = (id: string, body: { name?: string; description?: string; definition: Definition }) =>
  api('/api/v1/workflows/{id}', { method: 'put', params: { id }, body: { ...body, definition: asBody(body.definition) } }).then((r) => withDefinition(r.data.workflow));

export const deleteWorkflow = (id: string) => api('/api/v1/workflows/{id}', { method: 'delete', params: { id } }).then((r) => r.data);

export const deployWorkflow = (id: string) => api('/api/v1/workflows/{id}/deploy', { method: 'post', params: { id } }).then((r) => r.data);
export const undeployWorkflow = (id: string) => api('/api/v1/workflows/{id}/deploy', { method: 'delete', params: { id } }).then((r) => r.data);
export const rollbackWorkflow = (id: string, version?: number) =>
  api('/api/v1/workflows/{id}/rollback', { method: 'post', params: { id }, body: version === undefined ? {} : { version } }).then((r) => r.data);

/** A deployed version, as GET /api/v1/workflows/{id}/versions lists them (newest first). */
export type WorkflowVersion = DataOf<'/api/v1/workflows/{id}/versions'>[number];

export const listVersions = (id: string, cursor?: string) =>
  api('/api/v1/workflows/{id}/versions', { params: { id }, query: { limit: 20, cursor } });

export const workflowStatus = (id: string) => api('/api/workflows/{id}/status', { params: { id } });

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
