/**
 * Token buckets with discrete refill: every whole minute adds `rate` tokens, capped at `2 x rate`.
 * A new bucket starts full. The clock is injectable so tests exhaust and refill without sleeping.
 */
export interface BucketState {
  limit: number;
  remaining: number;
  ratePerMinute: number;
  resetAt: Date;
  retryAfterMs: number;
}

export interface Clock { now(): number }
export const systemClock: Clock = { now: () => Date.now() };

const INTERVAL_MS = 60_000;

export class TokenBuckets {
  private readonly buckets = new Map<string, { tokens: number; lastRefill: number }>();

  constructor(private readonly clock: Clock = systemClock) {}

  private refill(key: string, rate: number, max: number) {
    const now = this.clock.now();
    let b = this.buckets.get(key);
    if (!b) {
      b = { tokens: max, lastRefill: now };
      this.buckets.set(key, b);
    } else {
      const intervals = Math.floor((now - b.lastRefill) / INTERVAL_MS);
      if (intervals > 0) {
        b.tokens = Math.min(max, b.tokens + intervals * rate);
        b.lastRefill += intervals * INTERVAL_MS;
      }
      if (b.tokens > max) b.tokens = max;
    }
    return { b, now };
  }

  /** Takes `tokens` when all are there (else none); the state after the attempt either way. */
  take(key: string, ratePerMinute: number, burst: number, tokens = 1): { allowed: boolean; state: BucketState } {
    const { b, now } = this.refill(key, ratePerMinute, burst);
    const allowed = b.tokens >= tokens;
    if (allowed) b.tokens -= tokens;
    return { allowed, state: this.state(b, ratePerMinute, burst, now) };
  }

  peek(key: string, ratePerMinute: number, burst: number): BucketState {
    const { b, now } = this.refill(key, ratePerMinute, burst);
    return this.state(b, ratePerMinute, burst, now);
  }

  private state(b: { tokens: number; lastRefill: number }, rate: number, max: number, now: number): BucketState {
    const resetAt = b.lastRefill + INTERVAL_MS;
    return { limit: max, remaining: Math.floor(b.tokens), ratePerMinute: rate, resetAt: new Date(resetAt), retryAfterMs: Math.max(0, resetAt - now) };
  }
}
