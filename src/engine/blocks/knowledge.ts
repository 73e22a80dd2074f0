// Knowledge: searches knowledge bases of the run's workspace by similarity through the knowledge port
// (ctx.ports.knowledge). The query, base ids and topK may hold references, resolved before the block runs.
import { z } from 'zod';
import { defineBlockType } from '../block-type.js';

const stringOrList = z.union([z.string().min(1), z.array(z.string().min(1)).min(1).max(20)]);

export const knowledgeConfigSchema = z.strictObject({
  query: z.string().min(1),
  knowledgeBaseIds: stringOrList.optional(),
  /** The single-base spelling. */
  knowledgeBaseId: z.string().min(1).optional(),
  topK: z.union([z.number().int().min(1).max(100), z.string()]).optional(),
  filters: z.union([z.record(z.string(), z.union([z.string(), z.number(), z.boolean()])), z.string()]).optional(),
}).refine((c) => c.knowledgeBaseIds !== undefined || c.knowledgeBaseId !== undefined, {
  message: 'knowledge needs knowledgeBaseIds (or knowledgeBaseId)',
  path: ['knowledgeBaseIds'],
});

export type KnowledgeConfig = z.infer<typeof knowledgeConfigSchema>;

/** Base ids given as a list, one id, or JSON text of a list (a reference to another block's output). */
function baseIds(config: KnowledgeConfig): string[] {
  const raw: unknown = config.knowledgeBaseIds ?? config.knowledgeBaseId;
  let v: unknown = raw;
  if (typeof v === 'string') {
    const t = v.trim();
    v = t.startsWith('[') ? (JSON.parse(t) as unknown) : t.split(',').map((s) => s.trim()).filter(Boolean);
  }
  if (!Array.isArray(v) || v.length === 0 || v.some((x) => typeof x !== 'string' || x === '')) {
    throw new Error('knowledgeBaseIds must be a non-empty list of knowledge base ids');
  }
  return v as string[];
}

function topK(value: unknown): number {
  if (value === undefined || value === '') return 10;
  const n = typeof value === 'string' ? Number(value.trim()) : value;
  if (typeof n !== 'number' || !Number.isInteger(n) || n < 1 || n > 100) throw new Error('topK must be an integer from 1 to 100');
  return n;
}

function filters(value: unknown): Record<string, unknown> | undefined {
  if (value === undefined || value === '') return undefined;
  const v: unknown = typeof value === 'string' ? JSON.parse(value) : value;
  if (typeof v !== 'object' || v === null || Array.isArray(v)) throw new Error('filters must be an object');
  return v as Record<string, unknown>;
}

export const knowledgeBlock = defineBlockType<KnowledgeConfig>({
  type: 'knowledge',
  config: knowledgeConfigSchema,
  async run(ctx, config) {
    const port = ctx.ports.knowledge;
    if (!port) throw new Error('knowledge bases are not available in this context');
    const query = String(config.query).trim();
    if (!query) throw new Error('query is empty');
    const results = await port.search({ knowledgeBaseIds: baseIds(config), query, topK: topK(config.topK), filters: filters(config.filters) });
    return { output: { results, totalResults: results.length, query } };
  },
});
