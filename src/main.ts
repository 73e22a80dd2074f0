#!/usr/bin/env node
import { Command, CommanderError } from 'commander';
import { loadConfig } from './config.js';
import { createLogger, openDatabaseWhileLoading } from './runtime.js';
import { registerAccountCommands } from './cli/accounts.js';
import { registerBackupCommands } from './cli/backup.js';
import { fail } from './cli/output.js';
import { registerWorkflowCommands } from './cli/workflows.js';
import { registerCreditCommands } from './cli/credits.js';
import { registerUsageCommands } from './cli/usage.js';
import { registerSecretCommands } from './cli/secrets.js';

// With --json anywhere on the line, every error is a JSON document on stdout, commander's own
// (unknown command, missing option) included: it reports them through outputError and exitOverride.
const wantsJson = process.argv.slice(2).includes('--json');
const program = new Command();
program
  .name('weft')
  .description('Weft: self-hostable workflow automation service')
  .showHelpAfterError(!wantsJson)
  .exitOverride()
  .configureOutput({ outputError: (text, write) => (wantsJson ? undefined : write(text)) });

async function runServer(role: 'all' | 'api' | 'worker'): Promise<void> {
  const config = loadConfig();
  if (role !== 'all' && !config.databaseUrl) {
    throw new Error(`weft ${role} needs DATABASE_URL: the embedded database serves one process (use weft serve)`);
  }
  const log = createLogger(config);
  // The server's modules load only for the commands that serve, while the database opens.
  const [opened, [{ startServer }, { startBanner }]] = await openDatabaseWhileLoading(
    config, () => Promise.all([import('./server.js'), import('./start-banner.js')]), log,
  );
  const server = await startServer(config, { announce: role === 'all', role, opened });
  if (role === 'worker') log.info({ database: server.ctx.db.mode }, 'Weft worker running async jobs');
  else {
    log.info({ url: server.url, database: server.ctx.db.mode, role }, `Weft listening on ${server.url} (API reference: ${server.url}/api/docs)`);
    process.stdout.write(startBanner(server.url));
  }
  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    log.info({ signal }, 'shutting down: finishing in-flight requests');
    const force = setTimeout(() => process.exit(1), 30_000);
    force.unref();
    server.close().then(
      () => process.exit(0),
      (err: unknown) => {
        log.error({ err }, 'shutdown failed');
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
}

program
  .command('serve')
  .description('Serve the HTTP API and run async jobs (PORT, HOST, WEFT_DATA_DIR, DATABASE_URL, LOG_LEVEL from the environment)')
  .action(() => runServer('all'));

program
  .command('api')
  .description('Serve the HTTP API only; worker processes run async jobs (needs DATABASE_URL, and REDIS_URL for prompt dispatch)')
  .action(() => runServer('api'));

program
  .command('worker')
  .description('Run async jobs only, no HTTP (needs DATABASE_URL)')
  .action(() => runServer('worker'));

registerAccountCommands(program);
registerWorkflowCommands(program);
registerCreditCommands(program);
registerUsageCommands(program);
registerBackupCommands(program);
registerSecretCommands(program);

program.parseAsync(process.argv).catch((err: unknown) => {
  if (err instanceof CommanderError) {
    if (err.exitCode === 0) process.exit(0); // --help, --version
    const message = err.code === 'commander.help' // a command group without its subcommand
      ? 'Incomplete command: see --help'
      : err.message.replace(/^error: /, '');
    if (wantsJson) process.stdout.write(JSON.stringify({ error: message }) + '\n');
    process.exit(err.exitCode || 1);
  }
  fail((err as Error).message, wantsJson);
});
