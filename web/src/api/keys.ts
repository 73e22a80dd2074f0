// API keys and workspace settings (the public /api/v1 routes the CLI and curl users call too).
import { apiData } from './client';

export interface ApiKey {
  id: string;
  name: string;
  type: 'personal' | 'workspace';
  workspaceId: string | null;
  userId: string;
  displayKey: string;
  createdAt: string;
  lastUsedAt: string | null;
}

export interface Workspace {
  id: string;
  name: string;
  allowPersonalKeys: boolean;
  plan: string;
  createdAt: string;
  updatedAt: string;
}

export const listKeys = (workspaceId: string) =>
  apiData<{ keys: ApiKey[] }>('/api/v1/keys', { query: { workspaceId } }).then((d) => d.keys);

export const createKey = (workspaceId: string, name: string, type: ApiKey['type']) =>
  apiData<ApiKey & { key: string }>('/api/v1/keys', { method: 'POST', body: { workspaceId, name, type } });

export const revokeKey = (id: string) => apiData<{ id: string; revoked: true }>(`/api/v1/keys/${encodeURIComponent(id)}`, { method: 'DELETE' });

export const getWorkspace = (id: string) =>
  apiData<{ workspace: Workspace }>(`/api/v1/workspaces/${encodeURIComponent(id)}`).then((d) => d.workspace);

export const setAllowPersonalKeys = (id: string, allowPersonalKeys: boolean) =>
  apiData<{ workspace: Workspace }>(`/api/v1/workspaces/${encodeURIComponent(id)}/settings`, { method: 'PATCH', body: { allowPersonalKeys } }).then((d) => d.workspace);
