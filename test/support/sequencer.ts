import fs from 'node:fs';
import path from 'node:path';
import { BaseSequencer, type TestSpecification } from 'vitest/node';

/**
 * Longest files first, so that the three forks end together instead of one running a minute-long CLI suite
 * alone at the end. vitest orders by the durations of this checkout's last run; a fresh checkout (CI) has
 * none and vitest would order by file size, which put the slowest files (small ones that spawn processes)
 * last: 582 s against 485 s. test-durations.json holds the durations of a recorded run for that case
 * (`node scripts/record-test-durations.mjs` after `npm test` refreshes it). A failed file still goes first.
 */
const recorded: Record<string, number> = JSON.parse(
  fs.readFileSync(path.join(import.meta.dirname, 'test-durations.json'), 'utf8'),
) as Record<string, number>;

export default class LongestFirstSequencer extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const root = this.ctx.config.root;
    const cache = this.ctx.cache;
    const weigh = (spec: TestSpecification) => {
      const file = path.relative(root, spec.moduleId).split(path.sep).join('/');
      const last = cache.getFileTestResults(`${spec.project.name}:${file}`);
      return { failed: last?.failed ?? false, ms: last?.duration ?? (recorded[file] ?? 0) * 1000, size: cache.getFileStats(`${spec.project.name}:${file}`)?.size ?? 0 };
    };
    const weighed = files.map((spec) => ({ spec, ...weigh(spec) }));
    weighed.sort((a, b) => Number(b.failed) - Number(a.failed) || b.ms - a.ms || b.size - a.size);
    return weighed.map((w) => w.spec);
  }
}
