import { createHmac } from 'node:crypto';
import { constantTimeEqual } from '../constant-time.js';

// A short-lived token standing in for an API key on a page, so the key itself never has to be written
// into HTML. It names the key and an expiry, and is signed with a server secret (derived from the secrets'
// encryption key, which every process holds and the database does not) together with the key's stored hash:
// any process can check it, revoking the key voids it, and reading the database is not enough to forge one
// (the key hash alone was: an audit forged a token from a world-readable data directory).

export function signScopedToken(secret: Buffer, keyId: string, keyHash: string, scope: string, expiresAt: number): string {
  return `${keyId}.${expiresAt}.${mac(secret, keyHash, keyId, scope, expiresAt)}`;
}

export function parseScopedToken(token: string): { keyId: string; expiresAt: number; mac: string } | undefined {
  const m = /^([0-9a-f-]{36})\.(\d{10,16})\.([A-Za-z0-9_-]{43})$/.exec(token);
  if (!m?.[1] || !m[2] || !m[3]) return undefined;
  return { keyId: m[1], expiresAt: Number(m[2]), mac: m[3] };
}

export function scopedTokenValid(
  secret: Buffer, parsed: { keyId: string; expiresAt: number; mac: string }, keyHash: string, scope: string, now: number,
): boolean {
  if (parsed.expiresAt < now) return false;
  return constantTimeEqual(mac(secret, keyHash, parsed.keyId, scope, parsed.expiresAt), parsed.mac);
}

function mac(secret: Buffer, keyHash: string, keyId: string, scope: string, expiresAt: number): string {
  return createHmac('sha256', secret).update(`${keyHash}\n${keyId}\n${scope}\n${expiresAt}`).digest('base64url');
}
