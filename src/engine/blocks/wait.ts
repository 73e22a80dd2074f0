// Wait: sleeps through the clock port (abortable).
import { z } from 'zod';
import { defineBlockType } from '../block-type.js';
import { formatInterpolated } from '../references.js';

export const waitConfigSchema = z.strictObject({
  seconds: z.union([z.number().min(0).max(300), z.string().min(1)]),
});

export type WaitConfig = z.infer<typeof waitConfigSchema>;

export const waitBlock = defineBlockType<WaitConfig>({
  type: 'wait',
  config: waitConfigSchema,
  retryable: false,
  async run(ctx, config) {
    const seconds = typeof config.seconds === 'string' ? Number(config.seconds.trim()) : config.seconds;
    if (typeof seconds !== 'number' || !Number.isFinite(seconds) || seconds < 0 || seconds > 300) {
      throw new Error(`seconds must be a number between 0 and 300; got ${formatInterpolated(config.seconds) || 'nothing'}`);
    }
    const ms = Math.round(seconds * 1000);
    await ctx.clock.sleep(ms, ctx.signal);
    return { output: { waitedMs: ms } };
  },
});
