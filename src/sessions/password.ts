import { randomBytes, randomInt, scrypt, type ScryptOptions } from 'node:crypto';
import { constantTimeEqual } from '../constant-time.js';

// Passwords are hashed with scrypt (node:crypto, run on libuv's thread pool, so the event loop keeps
// serving). The stored form names its parameters, so they can be raised later without breaking old hashes.

/** N = 2^15, r = 8: 32 MiB and about 50 to 100 ms a hash on this machine class. */
export const DEFAULT_HASH_COST = 15;
/** The lowest cost a production configuration accepts (see config.ts, WEFT_PASSWORD_HASH_COST). */
export const MIN_PRODUCTION_HASH_COST = 15;
/** The lowest cost at all (test runs, where hashing at full cost was most of the sign-in suites' time). */
export const MIN_HASH_COST = 10;
const MAX_HASH_COST = 20;
const R = 8;
const P = 1;
const KEY_LENGTH = 32;
const SALT_BYTES = 16;

export const MIN_PASSWORD_LENGTH = 12;
export const MAX_PASSWORD_LENGTH = 200;

function derive(password: string, salt: Buffer, log2N: number, r: number, p: number): Promise<Buffer> {
  const options: ScryptOptions = { N: 2 ** log2N, r, p, maxmem: 128 * r * 2 ** log2N * 2 };
  return new Promise((resolve, reject) => {
    // NFKC: the same password typed on another keyboard or OS composes to the same bytes.
    scrypt(password.normalize('NFKC'), salt, KEY_LENGTH, options, (err, key) => (err ? reject(err) : resolve(key)));
  });
}

/** Hashes with N = 2^`cost`; the cost is stored in the hash, so any cost set later still verifies it. */
export async function hashPassword(password: string, cost = DEFAULT_HASH_COST): Promise<string> {
  const salt = randomBytes(SALT_BYTES);
  const key = await derive(password, salt, cost, R, P);
  return `scrypt$${cost}$${R}$${P}$${salt.toString('base64url')}$${key.toString('base64url')}`;
}

/** True when `password` matches the stored hash; compared in constant time. A malformed hash matches nothing. */
export async function verifyPassword(password: string, stored: string): Promise<boolean> {
  const m = /^scrypt\$(\d{1,2})\$(\d{1,2})\$(\d{1,2})\$([A-Za-z0-9_-]+)\$([A-Za-z0-9_-]+)$/.exec(stored);
  if (!m) return false;
  const [log2N, r, p] = [Number(m[1]), Number(m[2]), Number(m[3])];
  if (log2N < MIN_HASH_COST || log2N > MAX_HASH_COST || r < 1 || r > 32 || p < 1 || p > 16) return false;
  const expected = Buffer.from(m[5] ?? '', 'base64url');
  const key = await derive(password, Buffer.from(m[4] ?? '', 'base64url'), log2N, r, p);
  return constantTimeEqual(expected, key);
}

/** What the sessions area does with passwords; scrypt in production, a counting wrapper in tests. */
export interface PasswordHasher {
  hash(password: string): Promise<string>;
  verify(password: string, stored: string): Promise<boolean>;
  /** One verification's work on a hash nothing matches (unknown email, no password set). */
  verifyNothing(password: string): Promise<false>;
}

/**
 * scrypt at N = 2^`cost`. `verifyNothing` spends the time of one verification on a hash that nothing
 * matches: a sign-in with an unknown email (or a user without a password) then takes as long as one
 * with a wrong password, so response times do not tell which emails exist.
 */
export function scryptHasher(cost = DEFAULT_HASH_COST): PasswordHasher {
  let dummy: Promise<string> | undefined;
  return {
    hash: (password) => hashPassword(password, cost),
    verify: verifyPassword,
    verifyNothing: async (password) => {
      dummy ??= hashPassword(randomBytes(16).toString('hex'), cost);
      await verifyPassword(password, await dummy);
      return false;
    },
  };
}

export const scryptPasswords: PasswordHasher = scryptHasher();

const ALPHABET = 'ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz23456789';

/** A one-time password: four groups of five characters (no look-alikes such as 0/O, 1/l/I), about 115 bits. */
export function generatePassword(): string {
  const groups: string[] = [];
  for (let g = 0; g < 4; g++) {
    let group = '';
    for (let i = 0; i < 5; i++) group += ALPHABET[randomInt(ALPHABET.length)];
    groups.push(group);
  }
  return groups.join('-');
}
