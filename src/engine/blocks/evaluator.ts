// Evaluator: a language model scores content against named metrics, each with a numeric range,
// by structured output. The output has one number per metric (by its name), plus model, tokens
// and cost. A score outside its range is clamped into it (and logged); a missing one is an error.
import { z } from 'zod';
import { defineBlockType } from '../block-type.js';
import { aiPortOf, numberOf, parseJsonAnswer, textOf } from './ai-port.js';

const RESERVED = new Set(['model', 'tokens', 'cost']);

export const evaluatorConfigSchema = z
  .strictObject({
    model: z.string().min(1).max(256),
    /** What to score: usually a reference to an upstream block's output. */
    content: z.string().min(1).max(1_000_000),
    metrics: z.array(z.strictObject({
      name: z.string().regex(/^[A-Za-z_][A-Za-z0-9_]{0,63}$/, 'metric names are letters, digits and underscores, not starting with a digit'),
      description: z.string().min(1).max(4000),
      min: z.number(),
      max: z.number(),
    })).min(1).max(50),
    temperature: z.union([z.number().min(0).max(2), z.string()]).optional(),
  })
  .superRefine((c, ctx) => {
    const seen = new Set<string>();
    c.metrics.forEach((m, i) => {
      if (seen.has(m.name)) ctx.addIssue({ code: 'custom', path: ['metrics', i, 'name'], message: `duplicate metric "${m.name}"` });
      if (RESERVED.has(m.name)) ctx.addIssue({ code: 'custom', path: ['metrics', i, 'name'], message: `"${m.name}" is reserved in the output` });
      if (m.min > m.max) ctx.addIssue({ code: 'custom', path: ['metrics', i, 'min'], message: 'min must not exceed max' });
      seen.add(m.name);
    });
  });

export type EvaluatorConfig = z.infer<typeof evaluatorConfigSchema>;

export const evaluatorBlock = defineBlockType<EvaluatorConfig>({
  type: 'evaluator',
  config: evaluatorConfigSchema,
  async run(ctx, config) {
    const ai = aiPortOf(ctx);
    const metrics = config.metrics.map((m) => ({ name: String(m.name), description: textOf(m.description), min: Number(m.min), max: Number(m.max) }));
    const properties: Record<string, unknown> = {};
    for (const m of metrics) properties[m.name] = { type: 'number', description: `${m.description} (from ${m.min} to ${m.max})`, minimum: m.min, maximum: m.max };
    const r = await ai.chat({
      model: textOf(config.model),
      temperature: numberOf(config.temperature, 'temperature', 0, 2),
      signal: ctx.signal,
      messages: [
        {
          role: 'system',
          content: 'You evaluate content. Score it on each metric within its range:\n' +
            metrics.map((m) => `- ${m.name} (${m.min} to ${m.max}): ${m.description}`).join('\n') +
            '\nAnswer with a JSON object holding one number per metric name.',
        },
        { role: 'user', content: textOf(config.content) },
      ],
      responseSchema: {
        name: 'evaluation',
        schema: { type: 'object', properties, required: metrics.map((m) => m.name), additionalProperties: false },
      },
    });
    const answer = parseJsonAnswer(r.content, 'evaluator');
    if (!answer || typeof answer !== 'object' || Array.isArray(answer)) throw new Error('evaluator: the model did not answer with an object of scores');
    const output: Record<string, unknown> = {};
    for (const m of metrics) {
      const raw = (answer as Record<string, unknown>)[m.name];
      const n = typeof raw === 'number' ? raw : typeof raw === 'string' && raw.trim() !== '' ? Number(raw) : NaN;
      if (!Number.isFinite(n)) throw new Error(`evaluator: no numeric score for metric "${m.name}"`);
      const clamped = Math.min(m.max, Math.max(m.min, n));
      if (clamped !== n) ctx.log('warn', `metric ${m.name}: score ${n} is outside ${m.min}..${m.max}; clamped to ${clamped}`);
      output[m.name] = clamped;
    }
    output.model = r.model;
    output.tokens = { prompt: r.usage.promptTokens, completion: r.usage.completionTokens, total: r.usage.totalTokens };
    output.cost = r.costUsd;
    return { output };
  },
});
