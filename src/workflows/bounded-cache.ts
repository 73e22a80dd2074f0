/**
 * A least-recently-used cache bounded by entries and by bytes, with an optional time to live. The caller
 * gives each value's size (measured once, when it is inserted), so a cache of large values holds at most
 * `maxBytes` of them however many there are: a count alone let 10,000 cached rows of 9 MB drafts exhaust
 * the heap (docs/architecture.md, Where limits are enforced).
 */
export interface BoundedCacheOptions {
  maxEntries: number;
  maxBytes: number;
  /** How long an entry is served after it was set; unset: until it is evicted. */
  ttlMs?: number;
  now?: () => number;
}

export interface CacheSize {
  entries: number;
  bytes: number;
}

interface Entry<V> {
  value: V;
  bytes: number;
  until: number;
}

export class BoundedCache<V> {
  // A Map iterates in insertion order: re-inserting on a hit keeps the least recently used first.
  private readonly entries = new Map<string, Entry<V>>();
  private totalBytes = 0;
  private readonly now: () => number;

  constructor(private readonly opts: BoundedCacheOptions) {
    this.now = opts.now ?? Date.now;
  }

  get(key: string): V | undefined {
    const entry = this.entries.get(key);
    if (!entry) return undefined;
    if (entry.until <= this.now()) {
      this.delete(key);
      return undefined;
    }
    this.entries.delete(key);
    this.entries.set(key, entry);
    return entry.value;
  }

  /** Stores a value of `bytes` bytes, evicting the least recently used past either bound; one bigger than the whole cache is not kept. */
  set(key: string, value: V, bytes: number): void {
    this.delete(key);
    if (bytes > this.opts.maxBytes || this.opts.maxEntries < 1) return;
    const until = this.opts.ttlMs === undefined ? Number.POSITIVE_INFINITY : this.now() + this.opts.ttlMs;
    this.entries.set(key, { value, bytes, until });
    this.totalBytes += bytes;
    while (this.entries.size > this.opts.maxEntries || this.totalBytes > this.opts.maxBytes) {
      const oldest = this.entries.keys().next();
      if (oldest.done) break;
      this.delete(oldest.value);
    }
  }

  delete(key: string): void {
    const entry = this.entries.get(key);
    if (!entry) return;
    this.entries.delete(key);
    this.totalBytes -= entry.bytes;
  }

  clear(): void {
    this.entries.clear();
    this.totalBytes = 0;
  }

  /** Entries held and the sum of their sizes (expired entries count until they are read or evicted). */
  size(): CacheSize {
    return { entries: this.entries.size, bytes: this.totalBytes };
  }
}
