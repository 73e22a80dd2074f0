import { createRequire } from 'node:module';
import type { Redis } from 'ioredis';
import type { BucketState, Clock } from './token-bucket.js';
import type { ConcurrencySlots, RateLimiter } from './rate-limiter.js';

const INTERVAL_MS = 60_000;

/** ioredis takes about 40 ms to load: only a process given REDIS_URL loads it. */
const loadIoredis = () => createRequire(import.meta.url)('ioredis') as typeof import('ioredis');

// One atomic step of a token bucket: refill by whole minutes, then take ARGV[5] tokens when all are there (0: a peek).
const BUCKET_SCRIPT = `
local b = redis.call('HMGET', KEYS[1], 'tokens', 'last')
local now = tonumber(ARGV[1]); local rate = tonumber(ARGV[2]); local burst = tonumber(ARGV[3]); local interval = tonumber(ARGV[4])
local tokens = tonumber(b[1]); local last = tonumber(b[2])
if tokens == nil then tokens = burst; last = now end
local n = math.floor((now - last) / interval)
if n > 0 then tokens = math.min(burst, tokens + n * rate); last = last + n * interval end
if tokens > burst then tokens = burst end
local want = tonumber(ARGV[5])
local allowed = 0
if want > 0 and tokens >= want then tokens = tokens - want; allowed = 1 end
redis.call('HSET', KEYS[1], 'tokens', tokens, 'last', last)
redis.call('PEXPIRE', KEYS[1], interval * (math.ceil(burst / rate) + 2))
return {allowed, tostring(tokens), tostring(last)}
`;

// Slots are members of a sorted set scored by expiry; expired ones are dropped first.
const ACQUIRE_SCRIPT = `
local now = tonumber(ARGV[1]); local ttl = tonumber(ARGV[2]); local limit = tonumber(ARGV[3])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
if redis.call('ZCARD', KEYS[1]) < limit then
  redis.call('ZADD', KEYS[1], now + ttl, ARGV[4])
  local keep = redis.call('PTTL', KEYS[1])
  if keep < ttl then redis.call('PEXPIRE', KEYS[1], ttl) end
  return 1
end
return 0
`;

type BucketReply = [number, string, string];

/** Buckets and slots shared by every API process through Redis (atomic Lua scripts). */
export class RedisLimits implements RateLimiter, ConcurrencySlots {
  private readonly redis: Redis;

  constructor(url: string, private readonly clock: Clock, private readonly prefix = 'weft:') {
    this.redis = new (loadIoredis().Redis)(url, { maxRetriesPerRequest: 2, enableOfflineQueue: true, lazyConnect: false });
    this.redis.defineCommand('weftBucket', { numberOfKeys: 1, lua: BUCKET_SCRIPT });
    this.redis.defineCommand('weftAcquire', { numberOfKeys: 1, lua: ACQUIRE_SCRIPT });
  }

  private async bucket(key: string, rate: number, burst: number, take: number): Promise<{ allowed: boolean; state: BucketState }> {
    const now = this.clock.now();
    const run = (this.redis as unknown as Record<string, (...a: unknown[]) => Promise<BucketReply>>).weftBucket;
    const [allowed, tokens, last] = await run.call(this.redis, `${this.prefix}tb:${key}`, now, rate, burst, INTERVAL_MS, String(take));
    const resetAt = Number(last) + INTERVAL_MS;
    return {
      allowed: allowed === 1,
      state: { limit: burst, remaining: Math.floor(Number(tokens)), ratePerMinute: rate, resetAt: new Date(resetAt), retryAfterMs: Math.max(0, resetAt - now) },
    };
  }

  take(key: string, rate: number, burst: number, tokens = 1) {
    return this.bucket(key, rate, burst, tokens);
  }

  async peek(key: string, rate: number, burst: number) {
    return (await this.bucket(key, rate, burst, 0)).state;
  }

  async acquire(account: string, limit: number, ttlMs: number, token: string): Promise<boolean> {
    const run = (this.redis as unknown as Record<string, (...a: unknown[]) => Promise<number>>).weftAcquire;
    const ok = await run.call(this.redis, `${this.prefix}slots:${account}`, this.clock.now(), ttlMs, limit, token);
    return ok === 1;
  }

  async release(account: string, token: string): Promise<void> {
    await this.redis.zrem(`${this.prefix}slots:${account}`, token);
  }

  async close(): Promise<void> {
    await this.redis.quit().catch(() => undefined);
  }
}
