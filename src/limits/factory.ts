import type { Config } from '../config.js';
import type { Database, Queryable } from '../db/database.js';
import { planTable } from './plans.js';
import { PostgresLimits } from './postgres.js';
import { MemoryRateLimiter, MemorySlots } from './rate-limiter.js';
import { RedisLimits } from './redis.js';
import { AdjustableClock, LimitsService } from './service.js';
import { StorageAccounting, type StorageSource } from './storage.js';
import type { LimitObserver } from '../observability/observer.js';

/**
 * Creates the limits service: counters in Redis when REDIS_URL is set, else in PostgreSQL (several
 * processes may share it), else (embedded) in memory. `storageSources` are every area's byte counters;
 * `workspacePlan` is the accounts area's plan lookup.
 */
export function createLimits(
  config: Config,
  db: Database,
  deps: { storageSources: readonly StorageSource[]; workspacePlan: (workspaceId: string, q: Queryable) => Promise<string>; observer?: LimitObserver },
): LimitsService {
  const plans = planTable(config.planLimitsJson);
  const clock = new AdjustableClock();
  const storage = new StorageAccounting(deps.storageSources, async (workspaceId, q) =>
    config.limitsEnabled ? plans(await deps.workspacePlan(workspaceId, q)).storageBytes : undefined, { concurrentWriters: db.mode === 'postgres' });
  if (config.redisUrl) {
    const redis = new RedisLimits(config.redisUrl, clock);
    return new LimitsService(config.limitsEnabled, db, redis, redis, clock, plans, storage, deps.observer);
  }
  if (db.mode === 'postgres') {
    const pg = new PostgresLimits(db, clock);
    return new LimitsService(config.limitsEnabled, db, pg, pg, clock, plans, storage, deps.observer);
  }
  return new LimitsService(config.limitsEnabled, db, new MemoryRateLimiter(clock), new MemorySlots(clock), clock, plans, storage, deps.observer);
}
