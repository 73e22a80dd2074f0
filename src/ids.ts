import { randomUUID, randomBytes, randomFillSync } from 'node:crypto';

export const newId = (): string => randomUUID();
export const newHexId = (prefix: string): string => prefix + randomBytes(16).toString('hex');

/**
 * Random bytes for ids made on hot paths (one per gateway request or run), taken from a pool refilled 4 KB at a
 * time: a call into the system's generator per id cost about 3 % of the gateway's main thread. For ids
 * only; keys and tokens take their bytes from `randomBytes` directly.
 */
const pool = Buffer.alloc(4096);
let poolUsed = pool.length;

/** Where `bytes` fresh random bytes start in the pool, refilling it when they do not fit. */
function takeRandom(bytes: number): number {
  if (poolUsed + bytes > pool.length) {
    randomFillSync(pool);
    poolUsed = 0;
  }
  const at = poolUsed;
  poolUsed += bytes;
  return at;
}

/**
 * A version-7 UUID (RFC 9562): 48 bits of Unix milliseconds, the version, then 74 random bits. Ids made one after
 * another sort in the order they were made, so an index keyed by them (run rows, their charges and steps) grows at
 * its end instead of on random pages: past about 100,000 runs those pages no longer fit the embedded
 * database's 16 MB of buffers, and each random insert read one back (docs/architecture.md, "Run ids"). Within
 * one millisecond the order is random, and nothing relies on it.
 */
export function newTimeOrderedId(now = Date.now()): string {
  const b = Buffer.allocUnsafe(16);
  b.writeUIntBE(now, 0, 6);
  const at = takeRandom(10);
  pool.copy(b, 6, at, at + 10);
  b[6] = (b[6] & 0x0f) | 0x70; // version 7
  b[8] = (b[8] & 0x3f) | 0x80; // variant 10
  const h = b.toString('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}

/**
 * A time-ordered token for ids that are not UUIDs (gateway completion ids, usage keys): 12 lowercase hex digits of
 * Unix milliseconds, then 16 base64url characters (96 random bits). Hex digits sort the same in every collation,
 * so these too are inserted at the end of the indexes keyed by them, for the reason `newTimeOrderedId` gives.
 */
export function newTimeOrderedToken(now = Date.now()): string {
  const at = takeRandom(12);
  return now.toString(16).padStart(12, '0') + pool.toString('base64url', at, at + 12);
}

const uuidPattern = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
export const isUuid = (s: string): boolean => uuidPattern.test(s);
