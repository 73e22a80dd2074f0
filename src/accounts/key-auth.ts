import type { Database } from '../db/database.js';
import type { AuthContext } from '../http/auth.js';
import { hashKey, sameHash } from './key-secret.js';
import { findKeyByHash, touchKey } from './store.js';

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
