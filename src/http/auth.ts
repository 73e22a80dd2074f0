import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { Database } from '../db/database.js';
import { findKeyByHash, touchKey, type KeyType, type Role } from '../accounts/store.js';
import { hashKey, sameHash } from '../accounts/key-secret.js';
import { roleAtLeast } from '../accounts/service.js';
import { isUuid } from '../ids.js';
import { HttpError, type ErrorFamily } from './errors.js';

export interface AuthContext {
  keyId: string;
  keyType: KeyType;
  userId: string;
  /** Set for workspace keys: the one workspace the key works in. */
  keyWorkspaceId: string | null;
}

export interface WorkspaceAccess {
  workspaceId: string;
  workspaceName: string;
  role: Role;
  userId: string;
  keyId: string;
  /** Who pays: the workspace for workspace keys, the user for personal keys. */
  billedAccount: string;
  plan: string;
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

/** Looks keys up by hash and keeps positive answers briefly; revocations are visible within `ttlMs`. */
export class KeyAuthenticator {
  private readonly cache = new Map<string, { ctx: AuthContext; until: number }>();

  constructor(private readonly db: Database, private readonly ttlMs: number) {}

  async authenticate(secret: string): Promise<AuthContext | undefined> {
    if (secret.length < 8 || secret.length > 256) return undefined;
    const hash = hashKey(secret);
    const now = Date.now();
    const hit = this.cache.get(hash);
    if (hit && hit.until > now) return hit.ctx;
    if (hit) this.cache.delete(hash);
    const row = await findKeyByHash(this.db, hash);
    if (!row || !sameHash(row.key_hash, hash)) return undefined;
    const ctx: AuthContext = { keyId: row.id, keyType: row.type, userId: row.user_id, keyWorkspaceId: row.workspace_id };
    if (this.ttlMs > 0) {
      if (this.cache.size > 10_000) this.cache.clear();
      this.cache.set(hash, { ctx, until: now + this.ttlMs });
    }
    if (!row.last_used_at || now - row.last_used_at.getTime() > 600_000) {
      touchKey(this.db, row.id).catch(() => undefined);
    }
    return ctx;
  }

  /** Drops cached entries of a revoked key in this process at once. */
  forget(keyId: string): void {
    for (const [hash, entry] of this.cache) if (entry.ctx.keyId === keyId) this.cache.delete(hash);
  }
}

const missingMessage: Record<ErrorFamily, string> = {
  v1: 'API key required',
  execute: 'Unauthorized',
  coded: 'Authentication required',
  ai: 'Missing API key. Send it in the Authorization header as a Bearer token or in X-API-Key.',
};

function readKey(request: FastifyRequest, allowBearer: boolean): string | undefined {
  const header = request.headers['x-api-key'];
  const key = Array.isArray(header) ? header[0] : header;
  if (key) return key.trim();
  if (allowBearer) {
    const authz = request.headers.authorization;
    const m = authz ? /^Bearer\s+(.+)$/i.exec(authz) : null;
    if (m) return m[1].trim();
  }
  return undefined;
}

export function registerAuth(app: FastifyInstance, keys: KeyAuthenticator): void {
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
    const ctx = await keys.authenticate(secret);
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

interface WorkspaceWithRole {
  id: string; name: string; allow_personal_keys: boolean; plan: string; role: Role | null; user_plan: string;
}

/** Workspace and role lookups per key, kept as briefly as positive key lookups (changes bite within seconds). */
const accessCache = new Map<string, { row: WorkspaceWithRole | undefined; until: number }>();
let accessCacheMs = 2000;

export function configureAccessCache(ttlMs: number): void {
  accessCacheMs = ttlMs;
  accessCache.clear();
}

/** Forgets cached workspace access at once (settings, memberships or plans changed in this process). */
export function invalidateAccessCache(): void {
  accessCache.clear();
}

async function workspaceWithRole(db: Database, workspaceId: string, userId: string): Promise<WorkspaceWithRole | undefined> {
  const key = `${userId}:${workspaceId}`;
  const hit = accessCache.get(key);
  if (hit && hit.until > Date.now()) return hit.row;
  const rows = await db.query<WorkspaceWithRole>(
    `SELECT w.id, w.name, w.allow_personal_keys, w.plan, m.role, u.plan AS user_plan
       FROM workspaces w
       JOIN users u ON u.id = $2
       LEFT JOIN memberships m ON m.workspace_id = w.id AND m.user_id = $2
      WHERE w.id = $1`,
    [workspaceId, userId],
  );
  if (accessCacheMs > 0) {
    if (accessCache.size > 10_000) accessCache.clear();
    accessCache.set(key, { row: rows[0], until: Date.now() + accessCacheMs });
  }
  return rows[0];
}

/**
 * Checks that the caller's key may act in a workspace with at least `minRole`.
 * With `conceal` (resource routes) a workspace the key cannot reach is reported as `notFoundMessage` (404),
 * exactly like a missing resource; without it the reference's 403 messages are used.
 */
export async function authorizeWorkspace(
  db: Database,
  request: FastifyRequest,
  workspaceId: string,
  minRole: Role,
  opts: { conceal?: boolean; notFoundMessage?: string } = {},
): Promise<WorkspaceAccess> {
  const auth = requireAuth(request);
  const notFound = () => new HttpError(404, opts.notFoundMessage ?? 'Workspace not found');
  if (!isUuid(workspaceId)) throw notFound();
  if (auth.keyType === 'workspace' && auth.keyWorkspaceId !== workspaceId) {
    if (opts.conceal) throw notFound();
    throw new HttpError(403, 'API key is not authorized for this workspace');
  }
  const ws = await workspaceWithRole(db, workspaceId, auth.userId);
  if (!ws) throw notFound();
  if (auth.keyType === 'personal') {
    if (!ws.role) throw notFound();
    if (!ws.allow_personal_keys) throw new HttpError(403, 'Personal API keys are not allowed for this workspace');
  }
  if (!ws.role || !roleAtLeast(ws.role, minRole)) throw new HttpError(403, 'Access denied');
  return {
    workspaceId: ws.id,
    workspaceName: ws.name,
    role: ws.role,
    userId: auth.userId,
    keyId: auth.keyId,
    billedAccount: auth.keyType === 'workspace' ? `workspace:${ws.id}` : `user:${auth.userId}`,
    plan: auth.keyType === 'workspace' ? ws.plan : ws.user_plan,
  };
}
