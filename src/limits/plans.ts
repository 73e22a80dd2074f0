import type { Plan } from '../config.js';

export interface PlanLimits {
  /** Executions per minute (refill rate); the bucket holds twice as many (burst). */
  syncPerMinute: number;
  asyncPerMinute: number;
  apiPerMinute: number;
  concurrentExecutions: number;
  syncTimeoutSeconds: number;
  asyncTimeoutSeconds: number;
  /** Usage cost cap per billing period, USD. */
  usageLimitUsd: number;
  storageBytes: number;
}

const GiB = 1024 ** 3;

/** The reference service's plan defaults (sim-api.md section 2). */
export const defaultPlans: Record<Plan, PlanLimits> = {
  free: { syncPerMinute: 50, asyncPerMinute: 200, apiPerMinute: 30, concurrentExecutions: 10, syncTimeoutSeconds: 300, asyncTimeoutSeconds: 5400, usageLimitUsd: 5, storageBytes: 5 * GiB },
  pro: { syncPerMinute: 150, asyncPerMinute: 1000, apiPerMinute: 100, concurrentExecutions: 50, syncTimeoutSeconds: 3000, asyncTimeoutSeconds: 5400, usageLimitUsd: 20, storageBytes: 50 * GiB },
  team: { syncPerMinute: 300, asyncPerMinute: 2500, apiPerMinute: 200, concurrentExecutions: 200, syncTimeoutSeconds: 3000, asyncTimeoutSeconds: 5400, usageLimitUsd: 40, storageBytes: 500 * GiB },
  enterprise: { syncPerMinute: 600, asyncPerMinute: 5000, apiPerMinute: 500, concurrentExecutions: 1000, syncTimeoutSeconds: 3000, asyncTimeoutSeconds: 5400, usageLimitUsd: 200, storageBytes: 500 * GiB },
};

export const BURST_MULTIPLIER = 2;

export function planLimits(plan: string): PlanLimits {
  return defaultPlans[(plan in defaultPlans ? plan : 'free') as Plan];
}
