import { createHash, randomBytes } from 'node:crypto';
import { constantTimeEqual } from '../constant-time.js';

export const KEY_PREFIX = 'sk-weft-';
const ALPHABET = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

/** `sk-weft-` + 32 uniformly random base62 characters (rejection sampling, no modulo bias). */
export function generateKeySecret(): string {
  let out = '';
  while (out.length < 32) {
    for (const byte of randomBytes(48)) {
      if (byte < 248 && out.length < 32) out += ALPHABET[byte % 62];
    }
  }
  return KEY_PREFIX + out;
}

export function hashKey(secret: string): string {
  return createHash('sha256').update(secret, 'utf8').digest('hex');
}

export function displaySuffix(secret: string): string {
  return `${KEY_PREFIX}...${secret.slice(-4)}`;
}

/** Constant-time equality of two hex digests of the same length. */
export function sameHash(a: string, b: string): boolean {
  return constantTimeEqual(Buffer.from(a, 'hex'), Buffer.from(b, 'hex'));
}
