// Human in the loop: pauses its branch until a person submits the form. On resume the step is
// replayed from `recorded` (its output is the submitted fields) and the run continues past it.
import { z } from 'zod';
import { defineBlockType } from '../block-type.js';
import { inputFieldTypes } from './start.js';

export const humanConfigSchema = z.strictObject({
  message: z.string().optional(),
  fields: z
    .array(
      z.object({
        name: z.string().min(1),
        type: z.enum(inputFieldTypes).default('string'),
        required: z.boolean().optional(),
        description: z.string().optional(),
      }),
    )
    .default([]),
  timeoutSeconds: z.number().int().positive().optional(),
  onTimeout: z.enum(['approve', 'fail']).optional(),
});

export type HumanConfig = z.infer<typeof humanConfigSchema>;

export const humanBlock = defineBlockType<HumanConfig>({
  type: 'human',
  config: humanConfigSchema,
  retryable: false,
  async run(_ctx, config) {
    const response: Record<string, unknown> = { message: config.message ?? null, fields: config.fields ?? [] };
    if (config.timeoutSeconds !== undefined) {
      response.timeoutSeconds = config.timeoutSeconds;
      response.onTimeout = config.onTimeout ?? 'fail';
    }
    return { pause: { response } };
  },
});
