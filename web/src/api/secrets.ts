// Workspace secrets (the public /api/v1/secrets routes). No route returns a value: the page only writes them.
import { api } from './client';
import type { DataOf } from './schema';

export type Secret = DataOf<'/api/v1/secrets'>['secrets'][number];

export const SECRET_NAME_PATTERN = /^[A-Z][A-Z0-9_]{0,63}$/;

export const listSecrets = (workspaceId: string) =>
  api('/api/v1/secrets', { query: { workspaceId } }).then((r) => r.data.secrets);

export const setSecret = (workspaceId: string, name: string, value: string) =>
  api('/api/v1/secrets/{name}', { method: 'put', params: { name }, body: { workspaceId, value } }).then((r) => r.data);

export const deleteSecret = (workspaceId: string, name: string) =>
  api('/api/v1/secrets/{name}', { method: 'delete', params: { name }, query: { workspaceId } }).then((r) => r.data);
