import { describe, expect, it } from 'vitest';
import { newTimeOrderedId, pooledRandomId } from '../../src/ids.js';

describe('pooledRandomId', () => {
  it('gives distinct base64url ids of the asked size across many refills of its pool', () => {
    const ids = Array.from({ length: 5_000 }, () => pooledRandomId(15)); // about 18 refills of the 4 KB pool
    for (const id of ids) expect(id).toMatch(/^[A-Za-z0-9_-]{20}$/);
    expect(new Set(ids).size).toBe(ids.length);
    expect(pooledRandomId(3)).toMatch(/^[A-Za-z0-9_-]{4}$/);
    expect(() => pooledRandomId(5_000)).toThrow(RangeError);
  });
});

describe('newTimeOrderedId', () => {
  it('writes the millisecond first, then version 7, the RFC variant and random bits', () => {
    const id = newTimeOrderedId(0x0123456789ab);
    expect(id).toMatch(/^01234567-89ab-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    const same = Array.from({ length: 2_000 }, () => newTimeOrderedId(1_700_000_000_000)); // pool refills included
    expect(new Set(same).size).toBe(same.length);
  });

  it('sorts ids of later milliseconds after earlier ones, across the 48 bits', () => {
    const times = [0, 1, 255, 256, 65_535, 1_700_000_000_000, 1_700_000_000_001, 2 ** 48 - 1];
    const ids = times.map((t) => newTimeOrderedId(t));
    expect([...ids].sort()).toEqual(ids);
  });
});
