import { randomBytes } from 'node:crypto';
import { afterAll } from 'vitest';
import { connectDatabase } from '../../src/db/connect.js';
import type { Database } from '../../src/db/database.js';
import { PostgresLimits } from '../../src/limits/postgres.js';
import { MemoryRateLimiter, MemorySlots } from '../../src/limits/rate-limiter.js';
import { RedisLimits } from '../../src/limits/redis.js';
import { freshDatabase } from '../support/harness.js';
import { limiterConformance } from './conformance.js';

limiterConformance('memory', async (clock) => {
  const buckets = new MemoryRateLimiter(clock);
  const slots = new MemorySlots(clock);
  return Object.assign(buckets, { acquire: slots.acquire.bind(slots), release: slots.release.bind(slots) });
});

let db: Database | undefined;
limiterConformance('database', async (clock) => {
  if (!db) {
    const where = await freshDatabase();
    db = await connectDatabase({ dataDir: where.dataDir ?? '', databaseUrl: where.databaseUrl });
  }
  const l = new PostgresLimits(db, clock);
  return Object.assign(l, { close: async () => undefined });
});
afterAll(async () => {
  await db?.close();
});

const redis = process.env.TEST_REDIS_URL;
limiterConformance('Redis', async (clock) => new RedisLimits(redis!, clock, `weft-test-${randomBytes(4).toString('hex')}:`), redis ? undefined : 'needs TEST_REDIS_URL');
