import type { Database, Queryable } from '../db/database.js';
import { HttpError, type ErrorExtra } from '../http/errors.js';
import { BASE_RUN_CHARGE_USD, BURST_MULTIPLIER, type PlanLimits, type PlanTable } from './plans.js';
import type { ConcurrencySlots, RateLimiter } from './rate-limiter.js';
import type { StorageGuard } from './storage.js';
import type { BucketState, Clock } from './token-bucket.js';
import type { LimitObserver } from '../observability/observer.js';
import { billingPeriod, periodCost, recordRunCharge, runCharges, runChargesSql, UsageRecorder } from './usage.js';

export type ExecutionMode = 'sync' | 'async';
export type BucketKind = ExecutionMode | 'api';

export interface ExecutionLimits {
  workflowExecutionRateLimit: Record<ExecutionMode, { requestsPerMinute: number; maxBurst: number; remaining: number; resetAt: string }>;
  usage: { currentPeriodCost: number; limit: number; plan: string; isExceeded: boolean };
}

export interface Admission {
  state: BucketState;
  /** The concurrency slot taken (null when limits are off); any process may free it with `releaseSlot`. */
  slot: string | null;
  /** Frees the concurrency slot; call once the run ended. */
  release: () => Promise<void>;
}

/** A clock tests can move: `now()` is the system time plus an offset. */
export class AdjustableClock implements Clock {
  offsetMs = 0;
  now(): number {
    return Date.now() + this.offsetMs;
  }
}

const noop = async () => undefined;

/**
 * Plans' limits per billed account: token buckets (sync, async, api), the usage cost cap of the
 * billing period, storage, and running executions.
 */
export class LimitsService {
  constructor(
    readonly enabled: boolean,
    private readonly db: Database,
    private readonly limiter: RateLimiter,
    private readonly slots: ConcurrencySlots,
    readonly clock: AdjustableClock,
    private readonly plans: PlanTable,
    /** Every area's stored bytes against the plan's quota (the sources are handed in by the composition root). */
    readonly storage: StorageGuard,
    /** Told of every refusal (metrics). */
    private readonly observer?: LimitObserver,
  ) {
    this.usage = new UsageRecorder(clock);
  }

  /** Usage accounting on this service's clock: the one writer of usage events that other areas are handed. */
  readonly usage: UsageRecorder;

  /** The limits of a plan, configuration overrides applied. */
  plan(name: string): PlanLimits {
    return this.plans(name);
  }

  private bucket(account: string, plan: string, kind: BucketKind): [string, number, number] {
    const p = this.plans(plan);
    const rate = kind === 'sync' ? p.syncPerMinute : kind === 'async' ? p.asyncPerMinute : p.apiPerMinute;
    return [`${account}:${kind}`, rate, rate * BURST_MULTIPLIER];
  }

  /**
   * Period cost per account for admission, reused for a second: the cap tolerates that staleness, the hot
   * path gains a query. Charges noted meanwhile are added to it, so a burst meets the cap promptly; a charge
   * that lands between the read and its note may be counted twice until the entry expires, which errs on
   * the side of the cap. Reports (usage-limits, snapshot) read the sum itself.
   */
  private readonly costs = new Map<string, { period: string; cost: number; until: number }>();

  private async currentCost(account: string): Promise<number> {
    const now = this.clock.now();
    const period = billingPeriod(new Date(now));
    const hit = this.costs.get(account);
    if (hit && hit.period === period && hit.until > Date.now()) return hit.cost;
    const noted = this.chargesNoted;
    const cost = await periodCost(this.db, account, new Date(now));
    // A charge counted while the sum was read may be missing from it: that sum is not kept.
    if (noted !== this.chargesNoted) return cost;
    if (this.costs.size > 10_000) this.costs.clear();
    this.costs.set(account, { period, cost, until: Date.now() + 1000 });
    return cost;
  }

  /** Charges counted into the cached costs so far (see currentCost). */
  private chargesNoted = 0;

  /**
   * Admits one execution in the reference's gate order: usage cap (402), rate bucket (429), then a
   * concurrency slot (429). Throws with Retry-After on 429.
   */
  async admitExecution(account: string, plan: string, mode: ExecutionMode): Promise<Admission> {
    if (!this.enabled) return { state: await this.limiter.peek(...this.bucket(account, plan, mode)), slot: null, release: noop };
    const p = this.plans(plan);
    const cost = await this.currentCost(account);
    if (cost >= p.usageLimitUsd) {
      this.observer?.limitRejected({ kind: 'usage' });
      throw new HttpError(402, `Usage limit exceeded: $${cost.toFixed(2)} used of $${p.usageLimitUsd.toFixed(2)} limit. Please upgrade your plan or raise your usage limit to continue.`);
    }
    const { allowed, state } = await this.limiter.take(...this.bucket(account, plan, mode));
    if (!allowed) {
      this.observer?.limitRejected({ kind: 'rate' });
      throw rateRefusal('Rate limit exceeded. Please try again later.', state);
    }
    const ttl = (mode === 'sync' ? p.syncTimeoutSeconds : p.asyncTimeoutSeconds) * 1000 + 60_000;
    const token = await this.slots.acquire(account, p.concurrentExecutions, ttl);
    if (token === null) {
      this.observer?.limitRejected({ kind: 'concurrency' });
      throw new HttpError(429, `Too many concurrent executions: the ${plan} plan runs at most ${p.concurrentExecutions} at a time`,
        { code: 'EXECUTION_CONCURRENCY_LIMIT', retryable: true, retryAfterSeconds: 5 }, { 'Retry-After': '5' });
    }
    let released = false;
    return {
      state,
      slot: token,
      release: async () => {
        if (released) return;
        released = true;
        await this.slots.release(account, token);
      },
    };
  }

  /**
   * Takes a token of a rate bucket keyed by something other than a billed account (e.g. one webhook
   * trigger's workflow), sized like the plan's `mode` bucket. 429 with Retry-After when empty.
   */
  async admitKeyed(key: string, plan: string, mode: ExecutionMode): Promise<BucketState> {
    const [, rate, burst] = this.bucket(key, plan, mode);
    if (!this.enabled) return this.limiter.peek(`${key}:${mode}`, rate, burst);
    const { allowed, state } = await this.limiter.take(`${key}:${mode}`, rate, burst);
    if (!allowed) {
      this.observer?.limitRejected({ kind: 'rate' });
      throw rateRefusal('Rate limit exceeded. Please try again later.', state);
    }
    return state;
  }

  /** Frees a slot taken by another process or before a restart (async runs). */
  async releaseSlot(account: string, slot: string): Promise<void> {
    await this.slots.release(account, slot);
  }

  /** Takes a token of the `api` bucket for an /api/v1 request. */
  async admitApi(account: string, plan: string): Promise<BucketState> {
    if (!this.enabled) return this.limiter.peek(...this.bucket(account, plan, 'api'));
    const { allowed, state } = await this.limiter.take(...this.bucket(account, plan, 'api'));
    if (!allowed) {
      this.observer?.limitRejected({ kind: 'api' });
      throw rateRefusal('Rate limit exceeded', state, { message: `API rate limit exceeded. Please retry after ${state.resetAt.toISOString()}` });
    }
    return state;
  }

  /** Records the base charge of a finished run (once per execution id), in the caller's transaction when given. */
  async chargeRun(account: string, executionId: string, q: Queryable = this.db): Promise<void> {
    const at = new Date(this.clock.now());
    if (await recordRunCharge(q, account, executionId, at)) this.noteRunsCharged(billingPeriod(at), [account]);
  }

  /** How a statement that ends runs records their base charges with them (runs' group commit): now on this clock. */
  runCharge(): { sql: (from: string) => string; period: string; amountUsd: string } {
    return { sql: runChargesSql, period: billingPeriod(new Date(this.clock.now())), amountUsd: BASE_RUN_CHARGE_USD.toFixed(9) };
  }

  /** Counts base charges recorded through `runCharge()` in the cached period cost of their accounts. */
  noteRunsCharged(period: string, accounts: readonly string[]): void {
    this.chargesNoted++;
    for (const account of accounts) {
      const hit = this.costs.get(account);
      if (hit && hit.period === period) hit.cost = Math.round((hit.cost + BASE_RUN_CHARGE_USD) * 1e9) / 1e9;
    }
  }

  /** Base charges (USD) of some runs by execution id; a run never charged is absent. */
  runCharges(executionIds: string[]): Promise<Map<string, number>> {
    return runCharges(this.db, executionIds);
  }

  /**
   * Takes a token of one operation's request bucket of a key (Sim's v2 buckets: `workflows.execute`,
   * `workflows.runs.read`, ...), sized like the plan's api bucket: polling a run never spends execute quota.
   * 429 `API rate limit exceeded` with Retry-After (whole seconds) when empty.
   */
  async admitOperation(subject: string, plan: string, operation: string): Promise<BucketState> {
    const [, rate, burst] = this.bucket(subject, plan, 'api');
    const key = `${subject}:op:${operation}`;
    if (!this.enabled) return this.limiter.peek(key, rate, burst);
    const { allowed, state } = await this.limiter.take(key, rate, burst);
    if (!allowed) {
      this.observer?.limitRejected({ kind: 'api' });
      throw new HttpError(429, 'API rate limit exceeded', { v2Details: { retryAfter: state.resetAt.toISOString() } }, rateHeaders(state, true));
    }
    return state;
  }

  async snapshot(account: string, plan: string): Promise<ExecutionLimits> {
    const p = this.plans(plan);
    const cost = await periodCost(this.db, account, new Date(this.clock.now()));
    const view = async (mode: ExecutionMode) => {
      const s = await this.limiter.peek(...this.bucket(account, plan, mode));
      return { requestsPerMinute: s.ratePerMinute, maxBurst: s.limit, remaining: s.remaining, resetAt: s.resetAt.toISOString() };
    };
    return {
      workflowExecutionRateLimit: { sync: await view('sync'), async: await view('async') },
      usage: { currentPeriodCost: cost, limit: p.usageLimitUsd, plan, isExceeded: cost >= p.usageLimitUsd },
    };
  }

  /** The usage-limits object: buckets, period cost and storage of an account. */
  async usageLimits(account: string, plan: string, workspaceIds: string[]) {
    const p = this.plans(plan);
    const view = async (mode: ExecutionMode) => {
      const s = await this.limiter.peek(...this.bucket(account, plan, mode));
      const resetAt = s.resetAt.toISOString();
      return { limit: s.limit, remaining: s.remaining, reset: resetAt, requestsPerMinute: s.ratePerMinute, maxBurst: s.limit, resetAt, isLimited: s.remaining === 0 };
    };
    const usedBytes = await this.storage.used(this.db, workspaceIds);
    const cost = await periodCost(this.db, account, new Date(this.clock.now()));
    return {
      success: true as const,
      rateLimit: { sync: await view('sync'), async: await view('async'), authType: 'api' as const },
      usage: { currentPeriodCost: cost, limit: p.usageLimitUsd, plan, isExceeded: cost >= p.usageLimitUsd },
      storage: { usedBytes, limitBytes: p.storageBytes, percentUsed: p.storageBytes > 0 ? Math.round((usedBytes / p.storageBytes) * 100 * 1e6) / 1e6 : 0 },
    };
  }

  async close(): Promise<void> {
    await this.limiter.close();
    if ((this.slots as unknown) !== this.limiter) await this.slots.close();
  }
}

/** X-RateLimit-* headers (and Retry-After when refused) for a bucket state. */
export function rateHeaders(state: BucketState, refused = false): Record<string, string> {
  return {
    'X-RateLimit-Limit': String(state.limit),
    'X-RateLimit-Remaining': String(Math.max(0, state.remaining)),
    'X-RateLimit-Reset': state.resetAt.toISOString(),
    ...(refused ? { 'Retry-After': String(retryAfterSeconds(state)) } : {}),
  };
}

/** Whole seconds until an empty bucket refills, at least 1: the Retry-After header and the body's retryAfterSeconds. */
function retryAfterSeconds(state: BucketState): number {
  return Math.max(1, Math.ceil(state.retryAfterMs / 1000));
}

/**
 * The 429 of an empty rate bucket. The body's `retryAfter` is the refill time in epoch milliseconds (what
 * the reference service sends, the same instant as X-RateLimit-Reset); `retryAfterSeconds` is the
 * Retry-After header's figure, so a client reading either body field or the header waits the same time.
 */
function rateRefusal(message: string, state: BucketState, extra: ErrorExtra = {}): HttpError {
  return new HttpError(429, message, { ...extra, retryAfter: state.resetAt.getTime(), retryAfterSeconds: retryAfterSeconds(state) }, rateHeaders(state, true));
}
