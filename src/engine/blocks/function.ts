// Function: user JavaScript (an async function body) run in the sandbox port. References become
// injected variables; `fetch` goes through the HTTP port; console output goes to the trace.
import { z } from 'zod';
import { defineBlockType } from '../block-type.js';

export const functionConfigSchema = z.strictObject({
  code: z.string().max(1_000_000),
  timeoutMs: z.number().int().min(1).max(60_000).default(10_000),
});

export type FunctionConfig = z.infer<typeof functionConfigSchema>;

export const functionBlock = defineBlockType<FunctionConfig>({
  type: 'function',
  config: functionConfigSchema,
  rawFields: ['code'],
  codeFields: ['code'],
  async run(ctx, config) {
    const timeoutMs = Math.max(1, Math.min(config.timeoutMs, ctx.remainingMs()));
    const result = await ctx.runCode(config.code, { timeoutMs, http: true });
    return { output: result.value === undefined ? null : result.value, logs: result.logs };
  },
});
