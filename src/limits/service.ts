import { randomUUID } from 'node:crypto';
import type { Database, Queryable } from '../db/database.js';
import { HttpError, type ErrorExtra } from '../http/errors.js';
import { BASE_RUN_CHARGE_USD, BURST_MULTIPLIER, type PlanLimits, type PlanTable } from './plans.js';
import type { ConcurrencySlots, RateLimiter } from './rate-limiter.js';
import type { StorageGuard } from './storage.js';
import type { BucketState, Clock } from './token-bucket.js';
import type { LimitObserver } from '../observability/observer.js';
import { runCosts, type RunCost } from './run-cost.js';
import { CapReached, ChargePools, type PoolKey, type ReservedCharge } from './charge-pool.js';
import { billingPeriod, periodCost, recordRunCharge, runCharges, runChargesSql, runUsageKey, UsageRecorder } from './usage.js';
import { reconcileTotals, releaseCharges, reserveCharges } from './usage-totals.js';

export { runUsageKey } from './usage.js';

export type ExecutionMode = 'sync' | 'async';
export type BucketKind = ExecutionMode | 'api';

export interface ExecutionLimits {
  workflowExecutionRateLimit: Record<ExecutionMode, { requestsPerMinute: number; maxBurst: number; remaining: number; resetAt: string }>;
  usage: { currentPeriodCost: number; limit: number; plan: string; isExceeded: boolean };
}

export interface Admission {
  state: BucketState;
  /**
   * The admission's token (null when limits are off): its concurrency slot and its reserved base charge.
   * Any process may free both with `releaseSlot` (an async run's worker does, when the run ends).
   */
  slot: string | null;
  /** Frees the concurrency slot and gives back the reserved charge unless the run's charge was written; call once the run ended. */
  release: () => Promise<void>;
  /**
   * Tells the admission that the usage event `usageKey` was written, which consumed its reservation when that is
   * the key it reserved for: `release` then frees the slot without a statement to give the charge back.
   */
  charged: (usageKey: string) => void;
  /**
   * The execution id the run must take, when the request let the limits choose it (`chooseExecutionId`):
   * its charge consumes the reservation made ahead for it. Undefined otherwise, and with limits off.
   */
  executionId?: string;
}

/** What an admission is for: the rate bucket it draws on, and how the run executes (its slot's lifetime). */
export interface AdmissionRequest {
  /** The bucket: `sync` for whatever the caller waits for (MCP tools/call too), `async` for queued work. */
  bucket: ExecutionMode;
  /** How the run executes: its plan timeout bounds how long the slot and the reservation are held. */
  mode: ExecutionMode;
  /**
   * The usage event idempotency key that will charge this run (`run:<execution id>`), when known: writing
   * it consumes the reservation in the same statement. Otherwise the reservation lasts until `release`.
   */
  usageKey?: string;
  /**
   * Without `usageKey`: the run takes the execution id the admission hands out (`Admission.executionId`),
   * whose charge was reserved ahead with others (src/limits/charge-pool.ts): no statement of its own.
   */
  chooseExecutionId?: boolean;
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
    this.pools = new ChargePools({ db, now: () => clock.now() });
  }

  /** Base charges reserved ahead for runs whose execution id the admission chooses. */
  private readonly pools: ChargePools;

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
   * The one admission of a run, whatever starts it (execute v1/v2, webhooks, schedules, MCP, resumes,
   * draft runs), in the reference's gate order: usage cap (402), rate bucket (429), concurrency slot
   * (429, Retry-After). The cap check reserves the run's base charge in the same statement, so the runs
   * admitted in a period never cost more than the cap allows, however many arrive at once; a later gate
   * that refuses gives the reservation back.
   */
  async admitRun(account: string, plan: string, req: AdmissionRequest): Promise<Admission> {
    const bucket = this.bucket(account, plan, req.bucket);
    if (!this.enabled) return { state: await this.limiter.peek(...bucket), slot: null, release: noop, charged: () => undefined };
    const p = this.plans(plan);
    const now = this.clock.now();
    const ttlMs = (req.mode === 'sync' ? p.syncTimeoutSeconds : p.asyncTimeoutSeconds) * 1000 + 60_000;
    const reserved = await this.reserve(account, p, now, ttlMs, req);
    const { token, usageKey } = reserved;
    try {
      const { allowed, state } = await this.limiter.take(...bucket);
      if (!allowed) {
        this.observer?.limitRejected({ kind: 'rate' });
        throw rateRefusal('Rate limit exceeded. Please try again later.', state);
      }
      if (!(await this.slots.acquire(account, p.concurrentExecutions, ttlMs, token))) {
        this.observer?.limitRejected({ kind: 'concurrency' });
        throw new HttpError(429, `Too many concurrent executions: the ${plan} plan runs at most ${p.concurrentExecutions} at a time`,
          { code: 'EXECUTION_CONCURRENCY_LIMIT', retryable: true, retryAfterSeconds: 5 }, { 'Retry-After': '5' });
      }
      let released = false;
      let consumed = false;
      return {
        state,
        slot: token,
        executionId: reserved.pooled?.charge.executionId,
        release: async () => {
          if (released) return;
          released = true;
          await this.releaseSlot(account, token, { reservationConsumed: consumed });
        },
        charged: (key) => {
          if (usageKey !== null && key === usageKey) consumed = true;
        },
      };
    } catch (err) {
      // Refused by a later gate: a charge reserved ahead goes back to its pool (its run never started).
      if (reserved.pooled) this.pools.giveBack(reserved.pooled.key, reserved.pooled.charge);
      else await releaseCharges(this.db, [token]).catch(() => undefined);
      throw err;
    }
  }

  /**
   * The usage cap's gate: a base charge reserved for this run, taken from its pool (reserved ahead) when the
   * admission chooses the execution id, else reserved now under the request's usage key. 402 when none fits.
   */
  private async reserve(account: string, p: PlanLimits, now: number, ttlMs: number, req: AdmissionRequest):
    Promise<{ token: string; usageKey: string | null; pooled?: { key: PoolKey; charge: ReservedCharge } }> {
    const period = billingPeriod(new Date(now));
    if (req.chooseExecutionId && req.usageKey === undefined) {
      const key: PoolKey = { account, period, amountUsd: BASE_RUN_CHARGE_USD, capUsd: p.usageLimitUsd, ttlMs };
      try {
        const charge = await this.pools.take(key);
        return { token: charge.token, usageKey: runUsageKey(charge.executionId), pooled: { key, charge } };
      } catch (err) {
        if (err instanceof CapReached) throw this.capRefusal(p, err.costUsd, err.reservedUsd);
        throw err;
      }
    }
    const token = randomUUID();
    const usage = await reserveCharges(this.db, {
      account, period, amountUsd: BASE_RUN_CHARGE_USD, capUsd: p.usageLimitUsd, tokens: [token],
      usageKeys: [req.usageKey ?? null], now: new Date(now), expiresAt: new Date(now + ttlMs),
    });
    if (usage.granted === 0) throw this.capRefusal(p, usage.costUsd, usage.reservedUsd);
    return { token, usageKey: req.usageKey ?? null };
  }

  /**
   * 402 (the refusal a run meets) once the account's cost this period has reached its plan's limit, for billed
   * requests that hold no charge of their own (knowledge uploads and searches); nothing when limits are off.
   * Reads the running total (one row), never a sum.
   */
  async refuseOverUsage(q: Queryable, account: string, plan: string): Promise<void> {
    if (!this.enabled) return;
    const p = this.plan(plan);
    const costUsd = await this.usage.currentCost(q, account);
    if (costUsd >= p.usageLimitUsd) throw this.capRefusal(p, costUsd, 0);
  }

  private capRefusal(p: PlanLimits, costUsd: number, reservedUsd: number): HttpError {
    this.observer?.limitRejected({ kind: 'usage' });
    const held = reservedUsd > 0 ? ` (including $${reservedUsd.toFixed(3)} reserved by runs in progress)` : '';
    return new HttpError(402, `Usage limit exceeded: $${(costUsd + reservedUsd).toFixed(2)} used${held} of $${p.usageLimitUsd.toFixed(2)} limit. Please upgrade your plan or raise your usage limit to continue.`);
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

  /**
   * Frees an admission's slot and gives back its reserved charge if the run's charge did not consume it,
   * from any process (an async run's admission is ended by the worker that ends the run). With
   * `reservationConsumed` (the run's charge, under the key the admission reserved for, was written) only the
   * slot is freed: there is nothing to give back, so no statement.
   */
  async releaseSlot(account: string, slot: string, opts: { reservationConsumed?: boolean } = {}): Promise<void> {
    if (opts.reservationConsumed) return this.slots.release(account, slot);
    await Promise.all([this.slots.release(account, slot), releaseCharges(this.db, [slot])]);
  }

  /**
   * Takes a token of the `api` bucket for an /api/v1 request, or `tokens` at once for a request that costs
   * several (all or none: 429 when the bucket does not hold them all). `explain` words the refusal's reason.
   */
  async admitApi(account: string, plan: string, tokens = 1, explain?: (state: BucketState) => string): Promise<BucketState> {
    if (!this.enabled) return this.limiter.peek(...this.bucket(account, plan, 'api'));
    const { allowed, state } = await this.limiter.take(...this.bucket(account, plan, 'api'), tokens);
    if (!allowed) throw this.apiRefusal(state, explain);
    return state;
  }

  /** Refuses like `admitApi` when the `api` bucket holds fewer than `tokens`, taking nothing either way. */
  async checkApi(account: string, plan: string, tokens: number, explain?: (state: BucketState) => string): Promise<void> {
    if (!this.enabled) return;
    const state = await this.limiter.peek(...this.bucket(account, plan, 'api'));
    if (state.remaining < tokens) throw this.apiRefusal(state, explain);
  }

  private apiRefusal(state: BucketState, explain?: (state: BucketState) => string): HttpError {
    this.observer?.limitRejected({ kind: 'api' });
    const why = explain ? `: ${explain(state)}` : `. Please retry after ${state.resetAt.toISOString()}`;
    return rateRefusal('Rate limit exceeded', state, { message: `API rate limit exceeded${why}` });
  }

  /** Records the base charge of a finished run (once per execution id), in the caller's transaction when given. */
  async chargeRun(account: string, executionId: string, q: Queryable = this.db): Promise<void> {
    await recordRunCharge(q, account, executionId, new Date(this.clock.now()));
  }

  /** How a statement that ends runs records their base charges with them (runs' group commit): now on this clock. */
  runCharge(): { sql: (from: string) => string; period: string; amountUsd: string } {
    return { sql: runChargesSql, period: billingPeriod(new Date(this.clock.now())), amountUsd: BASE_RUN_CHARGE_USD.toFixed(9) };
  }

  /** Base charges (USD) of some runs by execution id; a run never charged is absent. */
  runCharges(executionIds: string[]): Promise<Map<string, number>> {
    return runCharges(this.db, executionIds);
  }

  /**
   * What some runs cost (base charge plus their blocks' model usage) by stored execution id; a run with
   * nothing recorded yet is absent.
   */
  runCosts(executionIds: string[]): Promise<Map<string, RunCost>> {
    return runCosts(this.db, executionIds);
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

  /**
   * The `limits` object of an answer. `knownCostUsd`: the account's period cost as the statement that wrote
   * the run returned it (its charge included), which spares a read of the total.
   */
  async snapshot(account: string, plan: string, knownCostUsd?: number): Promise<ExecutionLimits> {
    const p = this.plans(plan);
    const cost = knownCostUsd ?? await periodCost(this.db, account, new Date(this.clock.now()));
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

  /**
   * Rebuilds the usage totals from usage_events (or, with `fix` false, only compares them): the totals
   * that differed, each with what it held and the events' sum.
   */
  reconcileUsage(fix: boolean) {
    return reconcileTotals(this.db, fix);
  }

  /** Gives back the charges reserved ahead that no run took yet (they count against the cap until then). */
  returnUnusedCharges(): Promise<void> {
    return this.pools.sweep(true);
  }

  async close(): Promise<void> {
    await this.pools.close();
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
