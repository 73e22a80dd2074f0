// The session routes of the dashboard's contract (see web/README.md); shapes from the generated API schema.
import { api } from './client';
import type { Success } from './schema';

export type SessionInfo = Success<'/api/v1/auth/session'>;
export type SessionUser = SessionInfo['user'];
export type SessionWorkspace = SessionInfo['workspaces'][number];
export type Role = SessionWorkspace['role'];

export const getSession = () => api('/api/v1/auth/session', { allowUnauthorized: true });

export const login = (email: string, password: string) =>
  api('/api/v1/auth/login', { method: 'post', body: { email, password }, allowUnauthorized: true });

export const logout = () => api('/api/v1/auth/logout', { method: 'post', allowUnauthorized: true });
export const logoutAll = () => api('/api/v1/auth/logout-all', { method: 'post', allowUnauthorized: true });

export const changePassword = (currentPassword: string, newPassword: string) =>
  api('/api/v1/auth/password', { method: 'post', body: { currentPassword, newPassword } });
