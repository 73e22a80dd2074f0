// Workspace secrets (the public /api/v1/secrets routes). No route returns a value: the page only writes them.
import { apiData } from './client';

export interface Secret {
  name: string;
  createdAt: string;
  updatedAt: string;
  lastUsedAt: string | null;
}

export const SECRET_NAME_PATTERN = /^[A-Z][A-Z0-9_]{0,63}$/;

export const listSecrets = (workspaceId: string) =>
  apiData<{ secrets: Secret[] }>('/api/v1/secrets', { query: { workspaceId } }).then((d) => d.secrets);

export const setSecret = (workspaceId: string, name: string, value: string) =>
  apiData<{ name: string; created: boolean }>(`/api/v1/secrets/${encodeURIComponent(name)}`, { method: 'PUT', body: { workspaceId, value } });

export const deleteSecret = (workspaceId: string, name: string) =>
  apiData<{ name: string; deleted: true; usedBy: { id: string; name: string }[] }>(
    `/api/v1/secrets/${encodeURIComponent(name)}`, { method: 'DELETE', query: { workspaceId } },
  );
