import { randomUUID } from 'node:crypto';
import type { Database } from '../db/database.js';
import type { ConcurrencySlots, RateLimiter } from './rate-limiter.js';
import type { BucketState, Clock } from './token-bucket.js';

const INTERVAL_MS = 60_000;

/**
 * Buckets and slots in PostgreSQL, for several processes without Redis: one upsert per take,
 * refill arithmetic done by the database on the locked row.
 */
export class PostgresLimits implements RateLimiter, ConcurrencySlots {
  constructor(private readonly db: Database, private readonly clock: Clock) {}

  private async step(key: string, rate: number, burst: number, take: boolean): Promise<{ allowed: boolean; state: BucketState }> {
    const now = this.clock.now();
    // $2 now, $3 rate, $4 burst, $5 1 to take a token, 0 to look.
    const rows = await this.db.query<{ tokens: number; last_refill: string | number; last_allowed: boolean }>(
      `WITH s AS (SELECT $2::bigint AS now, $3::float8 AS rate, $4::float8 AS burst, $5::int AS take)
       INSERT INTO rate_buckets AS b (key, tokens, last_refill, last_allowed)
       SELECT $1, s.burst - s.take, s.now, true FROM s
       ON CONFLICT (key) DO UPDATE SET
         tokens = (SELECT LEAST(s.burst, b.tokens + GREATEST(0, floor((s.now - b.last_refill) / ${INTERVAL_MS}.0)) * s.rate)
                          - CASE WHEN s.take = 1 AND LEAST(s.burst, b.tokens + GREATEST(0, floor((s.now - b.last_refill) / ${INTERVAL_MS}.0)) * s.rate) >= 1 THEN 1 ELSE 0 END FROM s),
         last_refill = (SELECT b.last_refill + GREATEST(0, GREATEST(0, floor((s.now - b.last_refill) / ${INTERVAL_MS}.0)))::bigint * ${INTERVAL_MS} FROM s),
         last_allowed = (SELECT LEAST(s.burst, b.tokens + GREATEST(0, floor((s.now - b.last_refill) / ${INTERVAL_MS}.0)) * s.rate) >= 1 FROM s)
       RETURNING tokens, last_refill, last_allowed`,
      [key, now, rate, burst, take ? 1 : 0],
    );
    const r = rows[0];
    const resetAt = Number(r.last_refill) + INTERVAL_MS;
    return {
      allowed: take && r.last_allowed,
      state: { limit: burst, remaining: Math.floor(r.tokens), ratePerMinute: rate, resetAt: new Date(resetAt), retryAfterMs: Math.max(0, resetAt - now) },
    };
  }

  take(key: string, rate: number, burst: number) {
    return this.step(key, rate, burst, true);
  }

  async peek(key: string, rate: number, burst: number) {
    return (await this.step(key, rate, burst, false)).state;
  }

  async acquire(account: string, limit: number, ttlMs: number): Promise<string | null> {
    const token = randomUUID();
    const now = new Date(this.clock.now());
    return this.db.tx(async (q) => {
      // Serializes acquirers of one account so the count and the insert agree.
      await q.query('SELECT pg_advisory_xact_lock(hashtext($1))', [account]);
      await q.query('DELETE FROM execution_slots WHERE account = $1 AND expires_at <= $2', [account, now]);
      const held = await q.query<{ n: number }>('SELECT count(*)::int AS n FROM execution_slots WHERE account = $1', [account]);
      if (held[0].n >= limit) return null;
      await q.query('INSERT INTO execution_slots (account, token, expires_at) VALUES ($1, $2, $3)', [account, token, new Date(now.getTime() + ttlMs)]);
      return token;
    });
  }

  async release(account: string, token: string): Promise<void> {
    await this.db.query('DELETE FROM execution_slots WHERE account = $1 AND token = $2', [account, token]);
  }

  async close(): Promise<void> {}
}
