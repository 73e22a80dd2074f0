import { constantTimeEqual } from '../constant-time.js';
import type {} from '@fastify/cookie';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { HttpError, type ErrorFamily } from './errors.js';

/** Who is calling: the key and what kind it is. Workspace keys act as their workspace, never as a user. */
export interface AuthContext {
  keyId: string;
  keyType: 'personal' | 'workspace';
  /** The key's owner (personal keys) or creator (workspace keys, kept for the record only). */
  userId: string;
  /** Set for workspace keys: the one workspace the key works in. */
  keyWorkspaceId: string | null;
  /**
   * `session`: a signed-in dashboard user (the session cookie), acting as the user like a personal key
   * (keyType 'personal', billed to the user); `keyId` is then the session's id.
   */
  via?: 'session';
}

/** Turns a presented secret into the caller, or undefined when no live key matches. */
export type KeyVerifier = (secret: string) => Promise<AuthContext | undefined>;

/** The dashboard's session cookie (src/sessions/). */
export const SESSION_COOKIE = 'weft_session';

/** Turns a session cookie's token into the caller and the session's CSRF token, or undefined. */
export type SessionVerifier = (token: string) => Promise<{ auth: AuthContext; csrfToken: string } | undefined>;

const STATE_CHANGING = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

/** True when the request's X-CSRF-Token header equals the session's token (compared in constant time). */
export function csrfTokenMatches(request: FastifyRequest, expected: string): boolean {
  const header = request.headers['x-csrf-token'];
  return constantTimeEqual((Array.isArray(header) ? header[0] : header) ?? '', expected);
}

/** 403 unless a state-changing request made with a session carries the session's CSRF token. */
export function checkCsrf(request: FastifyRequest, csrfToken: string): void {
  if (STATE_CHANGING.has(request.method) && !csrfTokenMatches(request, csrfToken)) {
    throw new HttpError(403, 'CSRF token missing or invalid');
  }
}

declare module 'fastify' {
  interface FastifyRequest {
    auth?: AuthContext;
  }
  interface FastifyContextConfig {
    /** `none`: no key needed. `key` (default under /api): X-API-Key. `bearer`: X-API-Key or Authorization: Bearer. */
    auth?: 'none' | 'key' | 'bearer';
  }
}

const missingMessage: Record<ErrorFamily, string> = {
  v1: 'API key required',
  execute: 'Unauthorized',
  coded: 'Authentication required',
  v2: 'API key required',
  ai: 'Missing API key. Send it in the Authorization header as a Bearer token or in X-API-Key.',
};

/** The key a request presents: X-API-Key, or (where allowed) an Authorization Bearer token. */
export function readKey(request: FastifyRequest, allowBearer: boolean): string | undefined {
  const header = request.headers['x-api-key'];
  const key = Array.isArray(header) ? header[0] : header;
  if (key) return key.trim();
  if (allowBearer) {
    const authz = request.headers.authorization;
    const m = authz ? /^Bearer\s+(.+)$/i.exec(authz) : null;
    if (m?.[1]) return m[1].trim();
  }
  return undefined;
}

/**
 * Parses and verifies the key of every route that needs one; what the key may do is decided by the areas.
 * Without a key, a valid session cookie authenticates the request as its user (when `sessions` is given;
 * @fastify/cookie must be registered first); state-changing requests then need the session's CSRF token.
 */
export function registerAuth(app: FastifyInstance, verify: KeyVerifier, sessions?: SessionVerifier): void {
  app.addHook('onRequest', async (request) => {
    const cfg = request.routeOptions.config;
    const url = request.routeOptions.url ?? '';
    const mode = cfg?.auth ?? (url.startsWith('/api/') && !url.startsWith('/api/docs') ? 'key' : 'none');
    if (mode === 'none') return;
    const family = cfg?.errorFamily ?? 'v1';
    const secret = readKey(request, mode === 'bearer');
    if (!secret) {
      const token = sessions ? request.cookies?.[SESSION_COOKIE] : undefined;
      const session = token ? await sessions?.(token) : undefined;
      if (session) {
        // Cookies ride along on requests other sites make: only a page that read the token may change things.
        checkCsrf(request, session.csrfToken);
        request.auth = session.auth;
        return;
      }
      throw new HttpError(401, missingMessage[family], family === 'ai' ? { code: 'invalid_api_key' } : {});
    }
    const ctx = await verify(secret);
    if (!ctx) {
      throw new HttpError(401, family === 'ai' ? 'Invalid API key provided.' : 'Invalid API key', family === 'ai' ? { code: 'invalid_api_key' } : {});
    }
    request.auth = ctx;
  });
}

export function requireAuth(request: FastifyRequest): AuthContext {
  if (!request.auth) throw new HttpError(401, 'API key required');
  return request.auth;
}
