// The session routes of the dashboard's contract (see web/README.md).
import { apiFetch } from './client';

export interface SessionUser { id: string; email: string; name: string }
export type Role = 'admin' | 'write' | 'read';
export interface SessionWorkspace { id: string; name: string; role: Role }
export interface SessionInfo {
  user: SessionUser;
  csrfToken: string;
  mustChangePassword: boolean;
  workspaces: SessionWorkspace[];
}

export const getSession = () => apiFetch<SessionInfo>('/api/v1/auth/session', { allowUnauthorized: true });

export const login = (email: string, password: string) =>
  apiFetch<{ user: SessionUser; csrfToken: string; mustChangePassword: boolean }>('/api/v1/auth/login', {
    method: 'POST', body: { email, password }, allowUnauthorized: true,
  });

export const logout = () => apiFetch<void>('/api/v1/auth/logout', { method: 'POST', allowUnauthorized: true });
export const logoutAll = () => apiFetch<void>('/api/v1/auth/logout-all', { method: 'POST', allowUnauthorized: true });

export const changePassword = (currentPassword: string, newPassword: string) =>
  apiFetch<void>('/api/v1/auth/password', { method: 'POST', body: { currentPassword, newPassword } });
