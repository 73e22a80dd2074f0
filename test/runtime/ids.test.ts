import { describe, expect, it } from 'vitest';
import { newTimeOrderedId, newTimeOrderedToken } from '../../src/ids.js';

describe('newTimeOrderedToken', () => {
  it('writes the millisecond as 12 hex digits, then 16 base64url characters, distinct across many refills of the pool', () => {
    expect(newTimeOrderedToken(0x0123456789ab)).toMatch(/^0123456789ab[A-Za-z0-9_-]{16}$/);
    const same = Array.from({ length: 5_000 }, () => newTimeOrderedToken(1_700_000_000_000)); // about 15 refills of the 4 KB pool
    for (const t of same) expect(t).toMatch(/^018bcfe56800[A-Za-z0-9_-]{16}$/);
    expect(new Set(same).size).toBe(same.length);
  });

  it('sorts tokens of later milliseconds after earlier ones, byte-wise and in a locale collation', () => {
    const times = [0, 1, 15, 16, 255, 65_535, 1_700_000_000_000, 1_700_000_000_001, 2 ** 48 - 1];
    const tokens = times.map((t) => newTimeOrderedToken(t));
    expect([...tokens].sort()).toEqual(tokens);
    expect([...tokens].sort((a, b) => a.localeCompare(b, 'en'))).toEqual(tokens);
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
