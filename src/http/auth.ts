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
}

/** Turns a presented secret into the caller, or undefined when no live key matches. */
export type KeyVerifier = (secret: string) => Promise<AuthContext | undefined>;

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

/** Parses and verifies the key of every route that needs one; what the key may do is decided by the areas. */
export function registerAuth(app: FastifyInstance, verify: KeyVerifier): void {
  app.addHook('onRequest', async (request) => {
    const cfg = request.routeOptions.config;
    const url = request.routeOptions.url ?? '';
    const mode = cfg?.auth ?? (url.startsWith('/api/') && !url.startsWith('/api/docs') ? 'key' : 'none');
    if (mode === 'none') return;
    const family = cfg?.errorFamily ?? 'v1';
    const secret = readKey(request, mode === 'bearer');
    if (!secret) {
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
