// Loop: a container whose children run once per iteration, sequentially.
// Kinds: for (count), forEach (items; objects as [key, value] entries), while (condition checked
// before each iteration), doWhile (checked after each). Every kind is capped by the run's loopCap.
// Output {results}: results[i] is the output of iteration i's last leaf (definition order). runScope counts
// each result as it arrives and fails the iteration that takes them past the block output cap (node.ts).
import { z } from 'zod';
import { defineBlockType, RunStoppedError, type ScopeHandle } from '../block-type.js';
import { toCount, toItems, isTruthy } from './collection.js';

export const loopConfigSchema = z.discriminatedUnion('kind', [
  z.strictObject({ kind: z.literal('for'), count: z.union([z.number().int().min(0), z.string().min(1)]) }),
  z.strictObject({ kind: z.literal('forEach'), items: z.unknown() }),
  z.strictObject({ kind: z.literal('while'), condition: z.string().min(1) }),
  z.strictObject({ kind: z.literal('doWhile'), condition: z.string().min(1) }),
]);

export type LoopConfig = z.infer<typeof loopConfigSchema>;

export const loopBlock = defineBlockType<LoopConfig>({
  type: 'loop',
  config: loopConfigSchema,
  container: 'loop',
  rawFields: ['condition'],
  innerFields: ['condition'],
  retryable: false,
  async run(ctx, config) {
    const control = ctx.container;
    if (!control) throw new Error('loop blocks need a container context');
    const cap = ctx.limits.loopCap;
    let items: unknown[] | null = null;
    let total: number | null = null;
    if (config.kind === 'for') {
      total = toCount(config.count, 'count');
    } else if (config.kind === 'forEach') {
      items = toItems(config.items, 'items');
      total = items.length;
    }
    if (total !== null && total > cap) throw new Error(`loop of ${total} iterations exceeds the maximum of ${cap} iterations`);

    const results: unknown[] = [];
    let previous: ScopeHandle | null = null;
    for (let i = 0; ; i++) {
      if (control.stopped()) throw new RunStoppedError();
      const frame = { index: i, currentItem: items ? items[i] : config.kind === 'for' ? i : null, items, total: total ?? undefined };
      if (total !== null) {
        if (i >= total) break;
      } else if (config.kind === 'while' || (config.kind === 'doWhile' && i > 0)) {
        const value = await control.evaluate(`return (${config.condition}\n);`, frame, previous);
        if (!isTruthy(value)) break;
      }
      if (i >= cap) throw new Error(`loop exceeded the maximum of ${cap} iterations`);
      const outcome = await control.runScope(frame);
      if (outcome.status === 'completed') {
        results.push(outcome.output);
        previous = outcome.scope;
      } else if (outcome.status === 'paused') {
        return { pause: null };
      } else if (outcome.status === 'failed') {
        throw outcome.error;
      } else {
        throw new RunStoppedError();
      }
    }
    return { output: { results } };
  },
});
