import { defineConfig } from 'vitest/config';
import LongestFirstSequencer from './test/support/sequencer.js';

// Integration suites run once per database mode: PGlite always, PostgreSQL when TEST_DATABASE_URL is set.
const modes = process.env.TEST_DATABASE_URL ? ['pglite', 'postgres'] : ['pglite'];

export default defineConfig({
  test: {
    globalSetup: ['./test/support/build-setup.ts', './test/support/global-setup.ts'],
    // Each test file's data directories are removed when it ends (test/support/temp-dirs.ts).
    setupFiles: ['./test/support/suite-cleanup.ts'],
    pool: 'forks',
    // Forks keep their modules from one file to the next (isolate: false): importing the server's module graph
    // cost each file 1 to 2 s. Files still get their own database and server; shared module state (the engine
    // suites' sandbox) is never disposed by one file. minForks = maxForks: with idle forks reclaimed, vitest
    // 3.2 sometimes ended the run with "Terminating worker thread".
    poolOptions: { forks: { execArgv: ['--no-node-snapshot'], maxForks: 3, minForks: 3, isolate: false } },
    // Longest files first, also on a fresh checkout (test/support/sequencer.ts).
    sequence: { sequencer: LongestFirstSequencer },
    testTimeout: 60_000,
    hookTimeout: 120_000,
    projects: modes.map((mode) => ({
      extends: true,
      test: {
        name: mode,
        // Test data directories are thrown away, so their commits need not reach the disk. Where fsync is slow
        // syncing costs the suite a third: with each fsync made 20 ms slower by a preloaded shim, test/tables,
        // workflows, limits and knowledge took 217 s synced and 163 s not. Suites about syncing turn it back
        // on; spawned servers inherit this; the e2e and fault suites run as `npm start` does.
        // In-process servers start their worker threads from the build, which the global setup keeps current
        // (src/worker-module.ts).
        env: { WEFT_TEST_DB: mode, WEFT_EMBEDDED_FSYNC: 'off', WEFT_WORKERS_FROM_BUILD: '1' },
        include: ['test/**/*.test.ts'],
        // Pure unit suites do not touch the database: run them once.
        exclude: mode === 'pglite' ? [] : ['test/web/**', 'test/engine/**', 'test/sandbox/**', 'test/net/**', 'test/queue/**', 'test/lint/**', 'test/runtime/**', 'test/knowledge/local-embedder.test.ts', 'test/knowledge/ranking.test.ts', 'test/knowledge/http-embedder.test.ts', 'test/knowledge/parse.test.ts', 'test/knowledge/chunker.test.ts', 'test/db/pglite-vacuum.test.ts', 'test/db/pglite-checkpoint.test.ts', 'test/db/embedded-fsync.test.ts', 'test/**/*.unit.test.ts'],
      },
    })),
  },
});
