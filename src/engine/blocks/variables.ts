// Variables: assigns run variables visible to later <variable.name> references.
import { z } from 'zod';
import { defineBlockType } from '../block-type.js';

export const variablesConfigSchema = z.strictObject({
  assignments: z.record(z.string().min(1), z.unknown()),
});

export type VariablesConfig = z.infer<typeof variablesConfigSchema>;

export const variablesBlock = defineBlockType<VariablesConfig>({
  type: 'variables',
  config: variablesConfigSchema,
  async run(ctx, config) {
    const assignments: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(config.assignments ?? {})) assignments[k] = v === undefined ? null : v;
    ctx.setVariables(assignments);
    return { output: assignments };
  },
});
