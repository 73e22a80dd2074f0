// Router: a language model picks one of the described routes by structured output. The block's
// handles are the route ids, so edges leave it with `branch: <routeId>`. An answer naming no
// known route is a block error (an error edge can catch it).
import { z } from 'zod';
import { defineBlockType } from '../block-type.js';
import { aiPortOf, numberOf, parseJsonAnswer, textOf } from './ai-port.js';

export const routerConfigSchema = z
  .strictObject({
    model: z.string().min(1).max(256),
    /** What to route: usually a reference to an upstream block's output. */
    prompt: z.string().min(1).max(1_000_000),
    routes: z.array(z.strictObject({
      id: z.string().min(1).max(200),
      description: z.string().min(1).max(4000),
    })).min(1).max(100),
    temperature: z.union([z.number().min(0).max(2), z.string()]).optional(),
  })
  .superRefine((c, ctx) => {
    const seen = new Set<string>();
    c.routes.forEach((r, i) => {
      if (seen.has(r.id)) ctx.addIssue({ code: 'custom', path: ['routes', i, 'id'], message: `duplicate route id "${r.id}"` });
      seen.add(r.id);
    });
  });

export type RouterConfig = z.infer<typeof routerConfigSchema>;

export const routerBlock = defineBlockType<RouterConfig>({
  type: 'router',
  config: routerConfigSchema,
  handles: (config) => config.routes.map((r) => r.id),
  selectBranch(output) {
    if (output !== null && typeof output === 'object') {
      const sel = (output as Record<string, unknown>).selectedRoute;
      return typeof sel === 'string' ? sel : null;
    }
    return null;
  },
  async run(ctx, config) {
    const ai = aiPortOf(ctx);
    const ids = config.routes.map((r) => String(r.id));
    const routeList = config.routes.map((r) => `- ${String(r.id)}: ${textOf(r.description)}`).join('\n');
    const r = await ai.chat({
      model: textOf(config.model),
      temperature: numberOf(config.temperature, 'temperature', 0, 2),
      signal: ctx.signal,
      messages: [
        {
          role: 'system',
          content: 'You route requests. Choose the single route that fits the input best, by its id. Routes:\n' + routeList +
            '\nAnswer with JSON: {"route": "<route id>", "reasoning": "<one sentence>"}.',
        },
        { role: 'user', content: textOf(config.prompt) },
      ],
      responseSchema: {
        name: 'route_choice',
        schema: {
          type: 'object',
          properties: { route: { type: 'string', enum: ids }, reasoning: { type: 'string' } },
          required: ['route', 'reasoning'],
          additionalProperties: false,
        },
      },
    });
    const answer = parseJsonAnswer(r.content, 'router') as { route?: unknown; reasoning?: unknown } | null;
    const route = answer && typeof answer === 'object' ? answer.route : undefined;
    if (typeof route !== 'string' || !ids.includes(route)) {
      throw new Error(`router: the model chose ${JSON.stringify(route ?? null)}, which is not one of the routes (${ids.join(', ')})`);
    }
    return {
      output: {
        selectedRoute: route,
        reasoning: typeof answer?.reasoning === 'string' ? answer.reasoning : '',
        model: r.model,
        tokens: { prompt: r.usage.promptTokens, completion: r.usage.completionTokens, total: r.usage.totalTokens },
        cost: r.costUsd,
      },
    };
  },
});
