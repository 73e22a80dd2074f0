import { z } from 'zod';

/** The reference's `limits` envelope on v1 list responses and execute results: the caller's execution buckets and usage. */
const bucketSchema = z.object({ requestsPerMinute: z.number(), maxBurst: z.number(), remaining: z.number(), resetAt: z.string() });
export const limitsSchema = z.object({
  workflowExecutionRateLimit: z.object({ sync: bucketSchema, async: bucketSchema }),
  usage: z.object({ currentPeriodCost: z.number(), limit: z.number(), plan: z.string(), isExceeded: z.boolean() }),
});


const tokensSchema = z.object({ prompt: z.number().int(), completion: z.number().int(), total: z.number().int() });

/** A run's cost (limits/run-cost.ts) as the logs API shows it, USD. */
export const runCostSchema = z.object({
  total: z.number().describe('base plus every model\'s total'),
  base: z.number().describe('The run\'s base charge (0 until it is written, when the run ends)'),
  tokens: tokensSchema.describe('Tokens of all the run\'s model calls'),
  models: z.record(z.string(), z.object({
    input: z.number().describe('USD for prompt tokens'),
    output: z.number().describe('USD for completion tokens'),
    total: z.number(),
    tokens: tokensSchema,
  })).describe('By model id'),
});
