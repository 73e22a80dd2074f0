// The LRU the workflow service caches rows, versions and compiled graphs in: bounded by entries and by
// the bytes its callers give, with an optional time to live.
import { describe, expect, it } from 'vitest';
import { BoundedCache } from '../../src/workflows/bounded-cache.js';

const keys = (c: BoundedCache<string>, all: string[]) => all.filter((k) => c.get(k) !== undefined);

describe('BoundedCache', () => {
  it('evicts the least recently used entries once the bytes pass the bound', () => {
    const c = new BoundedCache<string>({ maxEntries: 100, maxBytes: 100 });
    c.set('a', 'A', 40);
    c.set('b', 'B', 40);
    expect(c.size()).toEqual({ entries: 2, bytes: 80 });
    c.set('c', 'C', 40);
    expect(c.size()).toEqual({ entries: 2, bytes: 80 });
    expect(keys(c, ['a', 'b', 'c'])).toEqual(['b', 'c']);
    // One value bigger than the whole cache evicts nothing and is not kept.
    c.set('huge', 'H', 101);
    expect(c.get('huge')).toBeUndefined();
    expect(c.size()).toEqual({ entries: 2, bytes: 80 });
  });

  it('evicts the least recently used entries past the entry bound', () => {
    const c = new BoundedCache<string>({ maxEntries: 3, maxBytes: 1_000_000 });
    for (const k of ['a', 'b', 'c', 'd', 'e']) c.set(k, k.toUpperCase(), 1);
    expect(c.size()).toEqual({ entries: 3, bytes: 3 });
    expect(keys(c, ['a', 'b', 'c', 'd', 'e'])).toEqual(['c', 'd', 'e']);
  });

  it('keeps a read entry over one set before it (least recently used, not first in)', () => {
    const c = new BoundedCache<string>({ maxEntries: 2, maxBytes: 1_000 });
    c.set('a', 'A', 10);
    c.set('b', 'B', 10);
    expect(c.get('a')).toBe('A');
    c.set('c', 'C', 10);
    expect(c.get('b')).toBeUndefined();
    expect(c.get('a')).toBe('A');
    expect(c.get('c')).toBe('C');
  });

  it('serves an entry until its time to live has passed, then drops it', () => {
    let now = 1_000;
    const c = new BoundedCache<string>({ maxEntries: 10, maxBytes: 1_000, ttlMs: 1_000, now: () => now });
    c.set('a', 'A', 10);
    now += 999;
    expect(c.get('a')).toBe('A');
    now += 1;
    expect(c.get('a')).toBeUndefined();
    expect(c.size()).toEqual({ entries: 0, bytes: 0 });
  });

  it('counts a replaced or deleted entry out of its bytes', () => {
    const c = new BoundedCache<string>({ maxEntries: 10, maxBytes: 100 });
    c.set('a', 'A', 60);
    c.set('a', 'A2', 30);
    expect(c.size()).toEqual({ entries: 1, bytes: 30 });
    c.set('b', 'B', 70);
    expect(c.get('a')).toBe('A2');
    c.delete('a');
    expect(c.size()).toEqual({ entries: 1, bytes: 70 });
    c.clear();
    expect(c.size()).toEqual({ entries: 0, bytes: 0 });
  });
});
