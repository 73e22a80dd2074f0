// Workspace connectors (the public /api/v1/connectors routes), kept in one module: the Connectors page
// and the editor's palette and connector form read them from here. Shapes come from the generated schema;
// the operations' JSON Schemas (records there) are read as the editor's JsonSchema.
import { api } from '../../api/client';
import type { DataOf, RequestBody } from '../../api/schema';
import type { JsonSchema } from '../../editor/schema';

type ConnectorData = DataOf<'/api/v1/connectors'>['connectors'][number];
type OperationData = ConnectorData['operations'][number];

export type ConnectorOperation = Omit<OperationData, 'parameters' | 'requestBody'> & {
  /** JSON Schema of an object: one property per path, query or header parameter. */
  parameters: JsonSchema;
  /** JSON Schema of the JSON request body, or null when the operation takes none. */
  requestBody: JsonSchema | null;
};

export type Connector = Omit<ConnectorData, 'operations'> & { operations: ConnectorOperation[] };

/** What the add form sends: exactly one of spec (a parsed OpenAPI document) and specUrl. */
export type NewConnector = Omit<RequestBody<'/api/v1/connectors', 'post'>, 'workspaceId'>;
export type ConnectorAuthType = NonNullable<NewConnector['auth']>['type'];

const asConnector = (c: ConnectorData): Connector => c as Connector;

/** Every connector of the workspace: the list comes in pages bounded by size, followed here to the end. */
export async function listConnectors(workspaceId: string): Promise<Connector[]> {
  const all: Connector[] = [];
  let cursor: string | undefined;
  do {
    const r = await api('/api/v1/connectors', { query: { workspaceId, ...(cursor ? { cursor } : {}) } });
    all.push(...r.data.connectors.map(asConnector));
    cursor = r.data.nextCursor;
  } while (cursor);
  return all;
}

export const createConnector = (workspaceId: string, input: NewConnector) =>
  api('/api/v1/connectors', { method: 'post', body: { workspaceId, ...input } }).then((r) => asConnector(r.data.connector));

export const deleteConnector = (id: string) =>
  api('/api/v1/connectors/{id}', { method: 'delete', params: { id } }).then((r) => r.data);
