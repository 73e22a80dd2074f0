import { z } from 'zod';

export type PlanName = 'free' | 'pro' | 'team' | 'enterprise';
export const PLAN_NAMES: PlanName[] = ['free', 'pro', 'team', 'enterprise'];

export interface PlanLimits {
  /** Executions per minute (refill rate); the bucket holds twice as many (burst). */
  syncPerMinute: number;
  asyncPerMinute: number;
  /** Other /api/v1 requests per minute. */
  apiPerMinute: number;
  concurrentExecutions: number;
  syncTimeoutSeconds: number;
  asyncTimeoutSeconds: number;
  /** Usage cost cap per billing period (a calendar month, UTC), USD. */
  usageLimitUsd: number;
  storageBytes: number;
  /** The shortest time between two ticks of a schedule (its interval, or the closest ticks of its cron expression). */
  minScheduleIntervalSeconds: number;
}

const GiB = 1024 ** 3;

/** The reference service's plan defaults (sim-api.md section 2). */
export const defaultPlans: Record<PlanName, PlanLimits> = {
  free: { syncPerMinute: 50, asyncPerMinute: 200, apiPerMinute: 30, concurrentExecutions: 10, syncTimeoutSeconds: 300, asyncTimeoutSeconds: 5400, usageLimitUsd: 5, storageBytes: 5 * GiB, minScheduleIntervalSeconds: 60 },
  pro: { syncPerMinute: 150, asyncPerMinute: 1000, apiPerMinute: 100, concurrentExecutions: 50, syncTimeoutSeconds: 3000, asyncTimeoutSeconds: 5400, usageLimitUsd: 20, storageBytes: 50 * GiB, minScheduleIntervalSeconds: 10 },
  team: { syncPerMinute: 300, asyncPerMinute: 2500, apiPerMinute: 200, concurrentExecutions: 200, syncTimeoutSeconds: 3000, asyncTimeoutSeconds: 5400, usageLimitUsd: 40, storageBytes: 500 * GiB, minScheduleIntervalSeconds: 10 },
  enterprise: { syncPerMinute: 600, asyncPerMinute: 5000, apiPerMinute: 500, concurrentExecutions: 1000, syncTimeoutSeconds: 3000, asyncTimeoutSeconds: 5400, usageLimitUsd: 200, storageBytes: 500 * GiB, minScheduleIntervalSeconds: 1 },
};

export const BURST_MULTIPLIER = 2;
/** Charged per run on top of model tokens (the reference's base execution charge). */
export const BASE_RUN_CHARGE_USD = 0.005;

const planOverride = z.object({
    syncPerMinute: z.number().int().min(1), asyncPerMinute: z.number().int().min(1), apiPerMinute: z.number().int().min(1),
    concurrentExecutions: z.number().int().min(1), syncTimeoutSeconds: z.number().int().min(1), asyncTimeoutSeconds: z.number().int().min(1),
    usageLimitUsd: z.number().min(0), storageBytes: z.number().int().min(0), minScheduleIntervalSeconds: z.number().int().min(1),
  }).partial().strict();
const overrideSchema = z.object({
  free: planOverride.optional(), pro: planOverride.optional(), team: planOverride.optional(), enterprise: planOverride.optional(),
}).strict();

export type PlanTable = (plan: string) => PlanLimits;

/**
 * The plan table: the defaults with `WEFT_PLAN_LIMITS` applied, a JSON object of per-plan
 * overrides such as `{"free": {"syncPerMinute": 100, "usageLimitUsd": 10}}`.
 */
export function planTable(json: string | undefined): PlanTable {
  const plans = json ? withOverrides(json) : defaultPlans;
  return (plan) => plans[(plan in plans ? plan : 'free') as PlanName];
}

function withOverrides(json: string): Record<PlanName, PlanLimits> {
  let raw: unknown;
  try {
    raw = JSON.parse(json);
  } catch {
    throw new Error('WEFT_PLAN_LIMITS must be a JSON object');
  }
  const parsed = overrideSchema.safeParse(raw);
  if (!parsed.success) throw new Error(`WEFT_PLAN_LIMITS: ${parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`);
  const next = { ...defaultPlans };
  for (const [name, o] of Object.entries(parsed.data) as [PlanName, Partial<PlanLimits> | undefined][]) if (o) next[name] = { ...next[name], ...o };
  return next;
}
