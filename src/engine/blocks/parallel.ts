// Parallel: a container whose children run once per branch, concurrently (at most
// parallelFanOut branches at once, at most maxParallelBranches in total).
// Kinds: count, collection (objects as [key, value] entries). Output {results} in branch order. runScope
// counts each result as it arrives and fails the branch that takes them past the block output cap (node.ts).
import { z } from 'zod';
import { defineBlockType, RunStoppedError } from '../block-type.js';
import { toCount, toItems } from './collection.js';

export const parallelConfigSchema = z.discriminatedUnion('kind', [
  z.strictObject({ kind: z.literal('count'), count: z.union([z.number().int().min(0), z.string().min(1)]) }),
  z.strictObject({ kind: z.literal('collection'), items: z.unknown() }),
]);

export type ParallelConfig = z.infer<typeof parallelConfigSchema>;

export const parallelBlock = defineBlockType<ParallelConfig>({
  type: 'parallel',
  config: parallelConfigSchema,
  container: 'parallel',
  retryable: false,
  async run(ctx, config) {
    const control = ctx.container;
    if (!control) throw new Error('parallel blocks need a container context');
    const items = config.kind === 'collection' ? toItems(config.items, 'items') : null;
    const total = items ? items.length : toCount(config.kind === 'count' ? config.count : 0, 'count');
    const max = ctx.limits.maxParallelBranches;
    if (total > max) throw new Error(`parallel of ${total} branches exceeds the maximum of ${max} branches`);

    const results: unknown[] = new Array<unknown>(total).fill(null);
    let paused = false;
    let failure: Error | null = null;
    let stopped = false;
    let next = 0;
    const worker = async (): Promise<void> => {
      while (next < total && failure === null && !control.stopped()) {
        const index = next++;
        const outcome = await control.runScope({ index, currentItem: items ? items[index] : index, items, total });
        if (outcome.status === 'completed') results[index] = outcome.output;
        else if (outcome.status === 'paused') paused = true;
        else if (outcome.status === 'failed') failure ??= outcome.error;
        else stopped = true;
      }
    };
    const width = Math.max(1, Math.min(ctx.limits.parallelFanOut, total));
    await Promise.all(Array.from({ length: total === 0 ? 0 : width }, () => worker()));
    if (failure !== null) throw failure;
    if (stopped || (control.stopped() && next < total)) throw new RunStoppedError();
    if (paused) return { pause: null };
    return { output: { results } };
  },
});
