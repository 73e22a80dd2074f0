// The signed-in user, their workspaces and the chosen workspace. Pages inside the shell call
// useSession(); the shell only renders once a session is loaded, so `user` is always there.
import { createContext, useCallback, useContext, useEffect, useMemo, useState, type ReactNode } from 'react';
import { useQuery, useQueryClient } from '@tanstack/react-query';
import { useLocation, useNavigate } from 'react-router';
import { ApiError, setCsrfToken, setUnauthorizedHandler } from './api/client';
import { getSession, logout, logoutAll, type Role, type SessionInfo, type SessionUser, type SessionWorkspace } from './api/auth';

const WORKSPACE_KEY = 'weft.workspaceId';
export const SESSION_QUERY_KEY = ['session'] as const;

export interface Session {
  user: SessionUser;
  workspaces: SessionWorkspace[];
  /** The chosen workspace ('' only when the user belongs to none). */
  workspaceId: string;
  role: Role | undefined;
  setWorkspaceId(id: string): void;
  csrfToken: string;
  mustChangePassword: boolean;
  /** Re-read the session (after a password change, for instance). */
  refresh(): Promise<void>;
  signOut(everywhere?: boolean): Promise<void>;
}

interface SessionState {
  info: SessionInfo | null | undefined; // undefined: loading; null: signed out
  error: unknown;
  setInfo(info: SessionInfo | null): void;
  refresh(): Promise<void>;
}

const StateContext = createContext<SessionState | null>(null);
const SessionContext = createContext<Session | null>(null);

function readStoredWorkspace(): string | null {
  try {
    return window.localStorage.getItem(WORKSPACE_KEY);
  } catch {
    return null;
  }
}

/** Loads the session once and keeps the API client's CSRF token in step with it. */
export function SessionProvider({ children }: { children: ReactNode }) {
  const qc = useQueryClient();
  const navigate = useNavigate();
  const location = useLocation();
  const q = useQuery({
    queryKey: SESSION_QUERY_KEY,
    queryFn: async () => {
      try {
        return await getSession();
      } catch (e) {
        if (e instanceof ApiError && e.status === 401) return null;
        throw e;
      }
    },
    staleTime: 5 * 60_000,
    retry: 1,
  });
  const info = q.data;
  useEffect(() => setCsrfToken(info?.csrfToken), [info?.csrfToken]);

  // A 401 from any API call means the session ended (expired, signed out elsewhere): go to sign-in,
  // remembering where the user was.
  const path = location.pathname + location.search;
  useEffect(() => {
    setUnauthorizedHandler(() => {
      qc.setQueryData(SESSION_QUERY_KEY, null);
      if (!path.startsWith('/sign-in')) navigate(`/sign-in?next=${encodeURIComponent(path)}`, { replace: true });
    });
  }, [qc, navigate, path]);

  const state = useMemo<SessionState>(() => ({
    info,
    error: q.error,
    setInfo: (next) => {
      setCsrfToken(next?.csrfToken);
      qc.setQueryData(SESSION_QUERY_KEY, next);
    },
    refresh: async () => {
      await qc.invalidateQueries({ queryKey: SESSION_QUERY_KEY });
    },
  }), [info, q.error, qc]);
  return <StateContext.Provider value={state}>{children}</StateContext.Provider>;
}

/** The raw session state, for the sign-in page and the route guard (may be signed out or loading). */
export function useSessionState(): SessionState {
  const s = useContext(StateContext);
  if (!s) throw new Error('useSessionState outside SessionProvider');
  return s;
}

/** Provides the full Session to the pages inside the shell; renders only with a loaded session. */
export function SignedInSession({ info, children }: { info: SessionInfo; children: ReactNode }) {
  const { setInfo, refresh } = useSessionState();
  const qc = useQueryClient();
  const navigate = useNavigate();
  const [stored, setStored] = useState<string | null>(() => readStoredWorkspace());
  const workspaceId = info.workspaces.some((w) => w.id === stored) ? (stored as string) : (info.workspaces[0]?.id ?? '');
  const role = info.workspaces.find((w) => w.id === workspaceId)?.role;

  const setWorkspaceId = useCallback((id: string) => {
    try {
      window.localStorage.setItem(WORKSPACE_KEY, id);
    } catch {
      // storage may be unavailable (private mode); the choice then lasts for this page only
    }
    setStored(id);
  }, []);

  const signOut = useCallback(async (everywhere = false) => {
    try {
      await (everywhere ? logoutAll() : logout());
    } finally {
      qc.clear();
      setInfo(null);
      navigate('/sign-in', { replace: true });
    }
  }, [qc, setInfo, navigate]);

  const value = useMemo<Session>(() => ({
    user: info.user,
    workspaces: info.workspaces,
    workspaceId,
    role,
    setWorkspaceId,
    csrfToken: info.csrfToken,
    mustChangePassword: info.mustChangePassword,
    refresh,
    signOut,
  }), [info, workspaceId, role, setWorkspaceId, refresh, signOut]);
  return <SessionContext.Provider value={value}>{children}</SessionContext.Provider>;
}

export function useSession(): Session {
  const s = useContext(SessionContext);
  if (!s) throw new Error('useSession is for pages inside the signed-in shell');
  return s;
}

/** True when the current workspace role may do what `need` requires (admin > write > read). */
export function roleAllows(role: Role | undefined, need: Role): boolean {
  const rank = { read: 1, write: 2, admin: 3 } as const;
  return role !== undefined && rank[role] >= rank[need];
}
