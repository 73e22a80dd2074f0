import { defineConfig } from 'vitest/config';

// End-to-end suites (test/e2e): the built server (dist/main.js, with the dashboard in web/dist) and
// Debian's chromium through playwright-core. Not part of `npm test`: `npm run test:e2e` after
// `npm run build` (.ci/run runs it after the fault tests). Screenshots go to test-artifacts/e2e/<spec>/.
export default defineConfig({
  test: {
    name: 'e2e',
    // Named *.e2e.ts so that the main config's test/**/*.test.ts never picks them up.
    include: ['test/e2e/**/*.e2e.ts'],
    pool: 'forks',
    poolOptions: { forks: { execArgv: ['--no-node-snapshot'], singleFork: true } },
    // One spec at a time: each runs a server and a browser on a 2-core machine.
    fileParallelism: false,
    testTimeout: 180_000,
    hookTimeout: 180_000,
  },
});
