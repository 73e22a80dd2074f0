import { TokenBuckets, type BucketState, type Clock } from './token-bucket.js';

/** Token buckets per key: discrete refill of `rate` tokens a minute, capacity `burst`. */
export interface RateLimiter {
  /**
   * Takes `tokens` (default 1) at once when the bucket holds them all, else takes none: a request that costs
   * several tokens is admitted whole or not at all, whatever other requests do meanwhile.
   */
  take(key: string, ratePerMinute: number, burst: number, tokens?: number): Promise<{ allowed: boolean; state: BucketState }>;
  peek(key: string, ratePerMinute: number, burst: number): Promise<BucketState>;
  close(): Promise<void>;
}

/** Counters of running executions per account, capped. */
export interface ConcurrencySlots {
  /** Takes a slot under `token` (release it with the same), or false when `limit` slots are taken. */
  acquire(account: string, limit: number, ttlMs: number, token: string): Promise<boolean>;
  release(account: string, token: string): Promise<void>;
  close(): Promise<void>;
}

/** One process: buckets in memory. */
export class MemoryRateLimiter implements RateLimiter {
  readonly buckets: TokenBuckets;
  constructor(clock: Clock) {
    this.buckets = new TokenBuckets(clock);
  }
  async take(key: string, rate: number, burst: number, tokens = 1) {
    return this.buckets.take(key, rate, burst, tokens);
  }
  async peek(key: string, rate: number, burst: number) {
    return this.buckets.peek(key, rate, burst);
  }
  async close() {}
}

export class MemorySlots implements ConcurrencySlots {
  private readonly held = new Map<string, Map<string, number>>();
  constructor(private readonly clock: Clock) {}

  async acquire(account: string, limit: number, ttlMs: number, token: string): Promise<boolean> {
    const now = this.clock.now();
    let slots = this.held.get(account);
    if (!slots) {
      slots = new Map();
      this.held.set(account, slots);
    }
    for (const [token, until] of slots) if (until <= now) slots.delete(token);
    if (slots.size >= limit) return false;
    slots.set(token, now + ttlMs);
    return true;
  }

  async release(account: string, token: string): Promise<void> {
    const slots = this.held.get(account);
    slots?.delete(token);
    if (slots && slots.size === 0) this.held.delete(account);
  }

  async close() {}
}
