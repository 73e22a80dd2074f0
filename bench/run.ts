// `npm run bench -- <scenario> [options]`: runs bench/<scenario>.ts and prints its figures as one JSON line.
// Arguments after the scenario name are passed to its run(); a scenario that exports `standalone = true`
// starts its own servers and skips the test database templates.
const scenario = process.argv[2];
if (!scenario || !/^[a-z0-9-]+$/.test(scenario)) {
  process.stderr.write('usage: npm run bench -- <scenario> [options]   (a file name in bench/, without .ts)\n');
  process.exit(2);
}
process.env.WEFT_TEST_DB ??= 'pglite';
const mod = (await import(`./${scenario}.ts`)) as { run: (argv: string[]) => Promise<Record<string, unknown>>; standalone?: boolean };
// The test suites' set-up: the database templates, and a run id whose data directories (and, on PostgreSQL,
// databases) its teardown removes, so a scenario built on the test harness leaves nothing behind.
const teardown = mod.standalone ? undefined : await (await import('../test/support/global-setup.js')).default();
let figures: Record<string, unknown>;
try {
  figures = await mod.run(process.argv.slice(3));
} finally {
  await teardown?.();
}
process.stdout.write(JSON.stringify({ scenario, date: new Date().toISOString(), ...figures }) + '\n');
process.exit(0);
