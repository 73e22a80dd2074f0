import { describe, expect, it } from 'vitest';
import { pooledRandomId } from '../../src/ids.js';

describe('pooledRandomId', () => {
  it('gives distinct base64url ids of the asked size across many refills of its pool', () => {
    const ids = Array.from({ length: 5_000 }, () => pooledRandomId(15)); // about 18 refills of the 4 KB pool
    for (const id of ids) expect(id).toMatch(/^[A-Za-z0-9_-]{20}$/);
    expect(new Set(ids).size).toBe(ids.length);
    expect(pooledRandomId(3)).toMatch(/^[A-Za-z0-9_-]{4}$/);
    expect(() => pooledRandomId(5_000)).toThrow(RangeError);
  });
});
