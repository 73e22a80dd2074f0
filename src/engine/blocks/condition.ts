// Condition: ordered expressions, first truthy wins; an entry without expression is the fallback.
// All expressions are evaluated in one sandbox call with references injected as variables.
import { z } from 'zod';
import { defineBlockType } from '../block-type.js';

export const conditionConfigSchema = z
  .strictObject({
    conditions: z
      .array(
        z.object({
          id: z.string().min(1).max(200),
          title: z.string().optional(),
          expression: z.string().max(100_000).optional(),
        }),
      )
      .min(1),
    timeoutMs: z.number().int().min(1).max(60_000).default(5_000),
  })
  .superRefine((cfg, ctx) => {
    const seen = new Set<string>();
    cfg.conditions.forEach((c, i) => {
      if (seen.has(c.id)) ctx.addIssue({ code: 'custom', path: ['conditions', i, 'id'], message: `duplicate condition id "${c.id}"` });
      seen.add(c.id);
    });
  });

export type ConditionConfig = z.infer<typeof conditionConfigSchema>;

const MARK = /^__cond(\d+)__: /;

export const conditionBlock = defineBlockType<ConditionConfig>({
  type: 'condition',
  config: conditionConfigSchema,
  rawFields: ['conditions'],
  handles: (config) => config.conditions.map((c) => c.id),
  selectBranch(output) {
    if (output !== null && typeof output === 'object') {
      const sel = (output as Record<string, unknown>).selectedOption;
      return typeof sel === 'string' ? sel : null;
    }
    return null;
  },
  async run(ctx, config) {
    const conditions = config.conditions;
    let source = '';
    for (let i = 0; i < conditions.length; i++) {
      const expr = conditions[i].expression;
      if (expr === undefined || expr.trim() === '') {
        source += `return ${i};\n`;
        break;
      }
      source += `try { if (${expr}\n) return ${i}; } catch (e) { throw new Error('__cond${i}__: ' + (e instanceof Error ? (e.name && e.name !== 'Error' ? e.name + ': ' : '') + e.message : String(e))); }\n`;
    }
    source += 'return -1;';
    let index: unknown;
    try {
      const timeoutMs = Math.max(1, Math.min(config.timeoutMs, ctx.remainingMs()));
      index = (await ctx.runCode(source, { timeoutMs })).value;
    } catch (err) {
      const message = err instanceof Error ? err.message : String(err);
      const m = MARK.exec(message);
      if (m) throw new Error(`condition "${conditions[Number(m[1])]?.id}": ${message.slice(m[0].length)}`);
      throw err;
    }
    const i = typeof index === 'number' ? index : -1;
    const selected = i >= 0 && i < conditions.length ? conditions[i].id : null;
    return { output: { selectedOption: selected, conditionResult: selected !== null } };
  },
});
