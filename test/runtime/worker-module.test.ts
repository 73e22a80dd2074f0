import { once } from 'node:events';
import { afterEach, describe, expect, it } from 'vitest';
import { startModuleWorker } from '../../src/worker-module.js';

// The suites start workers from the build (WEFT_WORKERS_FROM_BUILD=1 in vitest.config.ts); this checks the
// path taken when running from sources without it (tsx: `npm run bench`, scripts).
describe('startModuleWorker from TypeScript sources', () => {
  const saved = process.env.WEFT_WORKERS_FROM_BUILD;
  afterEach(() => {
    process.env.WEFT_WORKERS_FROM_BUILD = saved;
  });

  it('loads a .ts worker module through tsx', async () => {
    delete process.env.WEFT_WORKERS_FROM_BUILD;
    const worker = startModuleWorker(new URL('./fixtures/placeholder.ts', import.meta.url).href, 'echo-worker', { name: 'echo' });
    try {
      worker.postMessage('hi');
      const [reply] = await once(worker, 'message');
      expect(reply).toBe('echo:hi');
    } finally {
      await worker.terminate();
    }
  });

  it('refuses to map a module outside src/ to the build', () => {
    process.env.WEFT_WORKERS_FROM_BUILD = '1';
    expect(() => startModuleWorker(new URL('./fixtures/placeholder.ts', import.meta.url).href, 'echo-worker', { name: 'echo' }))
      .toThrow(/is not under src\//);
  });
});
