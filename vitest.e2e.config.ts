import { defineConfig } from 'vitest/config';

// End-to-end suites (test/e2e): the built server (dist/main.js, with the dashboard in web/dist) and
// Debian's chromium through playwright-core. Not part of `npm test`: `npm run test:e2e` after
// `npm run build` (.ci/run runs it beside the fault tests, after `npm test`). Screenshots go to test-artifacts/e2e/<spec>/.
export default defineConfig({
  test: {
    name: 'e2e',
    // Named *.e2e.ts so that the main config's test/**/*.test.ts never picks them up.
    include: ['test/e2e/**/*.e2e.ts'],
    pool: 'forks',
    poolOptions: { forks: { execArgv: ['--no-node-snapshot'], singleFork: true } },
    // One spec at a time: each runs a server and a browser on a 2-core machine.
    fileParallelism: false,
    // A page polled for what the server already answered: expect.poll's 1 s default lost to a slow host's
    // first render (a CI failure), so the dashboard gets as long as playwright's own locators wait.
    expect: { poll: { timeout: 15_000, interval: 100 } },
    testTimeout: 180_000,
    hookTimeout: 180_000,
  },
});
