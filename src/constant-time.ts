// The one constant-time comparison (keys, tokens, signatures, password hashes, CSRF tokens).
import { createHash, timingSafeEqual } from 'node:crypto';

/**
 * True when `a` and `b` are equal. Both are hashed first, so the comparison takes the same time whatever
 * their contents and lengths (timingSafeEqual alone needs equal lengths, and an early length check leaks it).
 */
export function constantTimeEqual(a: string | Buffer, b: string | Buffer): boolean {
  return timingSafeEqual(createHash('sha256').update(a).digest(), createHash('sha256').update(b).digest());
}
