import { defineConfig } from 'vitest/config';

// Fault suites (test/faults): worker processes killed, PostgreSQL cut off and restarted, Redis lost,
// graceful shutdown. Each starts its own throwaway PostgreSQL cluster and Redis server on private
// ports. Not part of `npm test`: run with `npm run test:faults` (.ci/run runs it after `npm test`, beside the e2e tests).
export default defineConfig({
  test: {
    name: 'faults',
    // Named *.fault.ts so that the main config's test/**/*.test.ts never picks them up.
    include: ['test/faults/**/*.fault.ts'],
    globalSetup: ['./test/support/build-setup.ts'],
    pool: 'forks',
    poolOptions: { forks: { execArgv: ['--no-node-snapshot'], singleFork: true } },
    // One suite at a time: they spawn several server processes each on a 2-core machine.
    fileParallelism: false,
    testTimeout: 240_000,
    hookTimeout: 120_000,
  },
});
