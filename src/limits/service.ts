import { HttpError } from '../http/errors.js';
import { BURST_MULTIPLIER, planLimits } from './plans.js';
import { TokenBuckets, type BucketState, type Clock } from './token-bucket.js';

export type ExecutionMode = 'sync' | 'async';

export interface ExecutionLimits {
  workflowExecutionRateLimit: Record<ExecutionMode, { requestsPerMinute: number; maxBurst: number; remaining: number; resetAt: string }>;
  usage: { currentPeriodCost: number; limit: number; plan: string; isExceeded: boolean };
}

/** Rate limits of executions per billed account; usage cost comes from `costOf`. */
export class LimitsService {
  readonly buckets: TokenBuckets;

  constructor(
    private readonly enabled: boolean,
    clock?: Clock,
    private readonly costOf: (account: string) => Promise<number> = async () => 0,
  ) {
    this.buckets = new TokenBuckets(clock);
  }

  private bucket(account: string, plan: string, mode: ExecutionMode): [string, number, number] {
    const p = planLimits(plan);
    const rate = mode === 'sync' ? p.syncPerMinute : p.asyncPerMinute;
    return [`${account}:${mode}`, rate, rate * BURST_MULTIPLIER];
  }

  /** Admits one execution or throws 429 (with Retry-After) or 402 (usage limit reached). */
  async admitExecution(account: string, plan: string, mode: ExecutionMode): Promise<BucketState> {
    if (!this.enabled) return this.buckets.peek(...this.bucket(account, plan, mode));
    const p = planLimits(plan);
    const cost = await this.costOf(account);
    if (cost >= p.usageLimitUsd) {
      throw new HttpError(402, `Usage limit exceeded: $${cost.toFixed(2)} used of $${p.usageLimitUsd.toFixed(2)} limit. Please upgrade your plan or raise your usage limit to continue.`);
    }
    const { allowed, state } = this.buckets.take(...this.bucket(account, plan, mode));
    if (!allowed) {
      throw new HttpError(429, 'Rate limit exceeded. Please try again later.', {}, { 'Retry-After': String(Math.max(1, Math.ceil(state.retryAfterMs / 1000))) });
    }
    return state;
  }

  async snapshot(account: string, plan: string): Promise<ExecutionLimits> {
    const p = planLimits(plan);
    const cost = await this.costOf(account);
    const view = (mode: ExecutionMode) => {
      const s = this.buckets.peek(...this.bucket(account, plan, mode));
      return { requestsPerMinute: s.ratePerMinute, maxBurst: s.limit, remaining: s.remaining, resetAt: s.resetAt.toISOString() };
    };
    return {
      workflowExecutionRateLimit: { sync: view('sync'), async: view('async') },
      usage: { currentPeriodCost: cost, limit: p.usageLimitUsd, plan, isExceeded: cost >= p.usageLimitUsd },
    };
  }
}
