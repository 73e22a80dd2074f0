// Workspace connectors (the public /api/v1/connectors routes), kept in one module: the Connectors page
// and the editor's palette and connector form read them from here.
import { apiData } from '../../api/client';
import type { JsonSchema } from '../../editor/schema';

export type ConnectorAuthType = 'bearer' | 'header' | 'query' | 'basic';

export interface ConnectorAuth {
  type: ConnectorAuthType;
  /** Name of a workspace secret, never a value. */
  secret: string;
  /** Header (header) or query parameter (query) name. */
  name?: string;
}

export interface ConnectorOperation {
  operationId: string;
  method: string;
  path: string;
  summary: string;
  description?: string;
  /** JSON Schema of an object: one property per path, query or header parameter. */
  parameters: JsonSchema;
  /** JSON Schema of the JSON request body, or null when the operation takes none. */
  requestBody: JsonSchema | null;
}

export interface Connector {
  id: string;
  workspaceId: string;
  name: string;
  baseUrl: string;
  auth: ConnectorAuth | null;
  operations: ConnectorOperation[];
  createdAt: string;
  updatedAt: string;
}

export interface NewConnector {
  name: string;
  /** Exactly one of spec (a parsed OpenAPI document) and specUrl. */
  spec?: Record<string, unknown>;
  specUrl?: string;
  baseUrl?: string;
  auth?: ConnectorAuth;
}

export const listConnectors = (workspaceId: string) =>
  apiData<{ connectors: Connector[] }>('/api/v1/connectors', { query: { workspaceId } }).then((d) => d.connectors);

export const createConnector = (workspaceId: string, input: NewConnector) =>
  apiData<{ connector: Connector }>('/api/v1/connectors', { method: 'POST', body: { workspaceId, ...input } }).then((d) => d.connector);

export const deleteConnector = (id: string) =>
  apiData<{ id: string; deleted: true }>(`/api/v1/connectors/${encodeURIComponent(id)}`, { method: 'DELETE' });
