import { z } from 'zod';

/** The reference's `limits` envelope on v1 list responses and execute results: the caller's execution buckets and usage. */
const bucketSchema = z.object({ requestsPerMinute: z.number(), maxBurst: z.number(), remaining: z.number(), resetAt: z.string() });
export const limitsSchema = z.object({
  workflowExecutionRateLimit: z.object({ sync: bucketSchema, async: bucketSchema }),
  usage: z.object({ currentPeriodCost: z.number(), limit: z.number(), plan: z.string(), isExceeded: z.boolean() }),
});

