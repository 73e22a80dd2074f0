import type { AppContext } from './context.js';

/** Background parts of the areas (job workers, sweepers), started once the app is built. */
export const starters: ((ctx: AppContext) => Promise<void>)[] = [];

export async function startAreas(ctx: AppContext): Promise<void> {
  for (const start of starters) await start(ctx);
}
