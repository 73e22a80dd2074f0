// API keys and workspace settings (the public /api/v1 routes the CLI and curl users call too); shapes from
// the generated API schema.
import { api } from './client';
import type { DataOf } from './schema';

export type ApiKey = DataOf<'/api/v1/keys'>['keys'][number];
export type Workspace = DataOf<'/api/v1/workspaces/{id}'>['workspace'];

export const listKeys = (workspaceId: string) =>
  api('/api/v1/keys', { query: { workspaceId } }).then((r) => r.data.keys);

export const createKey = (workspaceId: string, name: string, type: ApiKey['type']) =>
  api('/api/v1/keys', { method: 'post', body: { workspaceId, name, type } }).then((r) => r.data);

export const revokeKey = (id: string) => api('/api/v1/keys/{id}', { method: 'delete', params: { id } }).then((r) => r.data);

export const getWorkspace = (id: string) =>
  api('/api/v1/workspaces/{id}', { params: { id } }).then((r) => r.data.workspace);

export const setAllowPersonalKeys = (id: string, allowPersonalKeys: boolean) =>
  api('/api/v1/workspaces/{id}/settings', { method: 'patch', params: { id }, body: { allowPersonalKeys } }).then((r) => r.data.workspace);
