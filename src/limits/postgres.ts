import { ASYNC_COMMIT, ASYNC_COMMIT_NAME } from '../db/async-commit.js';
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

  /** Takes `tokens` when all are there. The bucket row commits without waiting for the WAL flush: a lost update costs nothing. */
  async take(key: string, rate: number, burst: number, tokens = 1): Promise<{ allowed: boolean; state: BucketState }> {
    const now = this.clock.now();
    const refill = `LEAST(s.burst, b.tokens + GREATEST(0, floor((s.now - b.last_refill) / ${INTERVAL_MS}.0)) * s.rate)`;
    const rows = await this.db.query<{ tokens: number; last_refill: string | number; last_allowed: boolean }>(
      `WITH ${ASYNC_COMMIT},
            s AS (SELECT $2::bigint AS now, $3::float8 AS rate, $4::float8 AS burst, $5::float8 AS want FROM ${ASYNC_COMMIT_NAME})
       INSERT INTO rate_buckets AS b (key, tokens, last_refill, last_allowed)
       SELECT $1, CASE WHEN s.burst >= s.want THEN s.burst - s.want ELSE s.burst END, s.now, s.burst >= s.want FROM s
       ON CONFLICT (key) DO UPDATE SET
         tokens = (SELECT ${refill} - CASE WHEN ${refill} >= s.want THEN s.want ELSE 0 END FROM s),
         last_refill = (SELECT b.last_refill + GREATEST(0, floor((s.now - b.last_refill) / ${INTERVAL_MS}.0))::bigint * ${INTERVAL_MS} FROM s),
         last_allowed = (SELECT ${refill} >= s.want FROM s)
       RETURNING tokens, last_refill, last_allowed`,
      [key, now, rate, burst, tokens],
    );
    const r = rows[0];
    return { allowed: r.last_allowed, state: stateOf(r.tokens, Number(r.last_refill), rate, burst, now) };
  }

  /** Reads a bucket without writing: the refill is computed here. */
  async peek(key: string, rate: number, burst: number): Promise<BucketState> {
    const now = this.clock.now();
    const rows = await this.db.query<{ tokens: number; last_refill: string | number }>(
      'SELECT tokens, last_refill FROM rate_buckets WHERE key = $1', [key],
    );
    if (!rows[0]) return stateOf(burst, now, rate, burst, now);
    const last = Number(rows[0].last_refill);
    const intervals = Math.max(0, Math.floor((now - last) / INTERVAL_MS));
    return stateOf(Math.min(burst, rows[0].tokens + intervals * rate), last + intervals * INTERVAL_MS, rate, burst, now);
  }

  async acquire(account: string, limit: number, ttlMs: number, token: string): Promise<boolean> {
    const now = new Date(this.clock.now());
    return this.db.tx(async (q) => {
      // Serializes acquirers of one account so the count and the insert agree.
      await q.query('SELECT pg_advisory_xact_lock(hashtext($1))', [account]);
      await q.query('DELETE FROM execution_slots WHERE account = $1 AND expires_at <= $2', [account, now]);
      const held = await q.query<{ n: number }>('SELECT count(*)::int AS n FROM execution_slots WHERE account = $1', [account]);
      if (held[0].n >= limit) return false;
      await q.query('INSERT INTO execution_slots (account, token, expires_at) VALUES ($1, $2, $3)', [account, token, new Date(now.getTime() + ttlMs)]);
      return true;
    });
  }

  async release(account: string, token: string): Promise<void> {
    await this.db.query('DELETE FROM execution_slots WHERE account = $1 AND token = $2', [account, token]);
  }

  async close(): Promise<void> {}
}

function stateOf(tokens: number, lastRefill: number, rate: number, burst: number, now: number): BucketState {
  const resetAt = lastRefill + INTERVAL_MS;
  return { limit: burst, remaining: Math.floor(tokens), ratePerMinute: rate, resetAt: new Date(resetAt), retryAfterMs: Math.max(0, resetAt - now) };
}
