import { randomUUID, randomBytes, randomFillSync } from 'node:crypto';

export const newId = (): string => randomUUID();
export const newHexId = (prefix: string): string => prefix + randomBytes(16).toString('hex');

/**
 * Random bytes for ids made on hot paths (one per gateway request), taken from a pool refilled 4 KB at a
 * time: a call into the system's generator per id cost about 3 % of the gateway's main thread. For ids
 * only; keys and tokens take their bytes from `randomBytes` directly.
 */
const pool = Buffer.alloc(4096);
let poolUsed = pool.length;
export function pooledRandomId(bytes: number): string {
  if (bytes > pool.length) throw new RangeError('pooledRandomId: too many bytes');
  if (poolUsed + bytes > pool.length) {
    randomFillSync(pool);
    poolUsed = 0;
  }
  const id = pool.toString('base64url', poolUsed, poolUsed + bytes);
  poolUsed += bytes;
  return id;
}

const uuidPattern = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
export const isUuid = (s: string): boolean => uuidPattern.test(s);
