// `npm run bench -- <scenario>`: runs bench/<scenario>.ts and prints its figures as one JSON line.
const scenario = process.argv[2];
if (!scenario || !/^[a-z0-9-]+$/.test(scenario)) {
  process.stderr.write('usage: npm run bench -- <scenario>   (a file name in bench/, without .ts)\n');
  process.exit(2);
}
process.env.WEFT_TEST_DB ??= 'pglite';
const { ensureTemplates } = await import('../test/support/global-setup.js');
await ensureTemplates();
const mod = (await import(`./${scenario}.ts`)) as { run: () => Promise<Record<string, unknown>> };
const figures = await mod.run();
process.stdout.write(JSON.stringify({ scenario, date: new Date().toISOString(), ...figures }) + '\n');
process.exit(0);
