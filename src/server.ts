import type { FastifyInstance } from 'fastify';
import { buildApp } from './app.js';
import { composeServices, type Services } from './compose.js';
import type { Config } from './config.js';
import type { AppContext } from './context.js';
import { createLogger, openDatabase, startupStep, type OpenedDatabase } from './runtime.js';
import type { ConnectOptions } from './db/connect.js';
import { startAdminChannel } from './admin/channel.js';
import type { SchedulerClock } from './schedules/clock.js';
import type { PasswordHasher } from './sessions/password.js';
import { firstStartBanner } from './start-banner.js';

export interface RunningServer {
  app: FastifyInstance;
  ctx: AppContext;
  services: Services;
  url: string;
  /** Stops accepting, finishes in-flight requests and background work, closes the database. */
  close(): Promise<void>;
}

export interface StartOptions {
  /** Print the first-start banner with the bootstrap key (the CLI does; tests do not). */
  announce?: boolean;
  connect?: Partial<ConnectOptions>;
  /** `api`: HTTP only (jobs run in worker processes); `worker`: jobs only, no HTTP listener. */
  role?: AppContext['role'];
  /** The schedules' clock (tests advance a manual one); the system clock by default. */
  clock?: SchedulerClock;
  /** Password hashing and checks (tests count them); scrypt by default. */
  passwords?: PasswordHasher;
  /**
   * The database, already opened by the caller (`weft serve` opens it while this module graph loads); the
   * server then owns it and releases it when it closes or fails to start. Otherwise it is opened here.
   */
  opened?: OpenedDatabase;
}

/**
 * Opens the database, builds the services and the app, and listens. Interrupted async runs are
 * recovered only after the listener is up, in the background: a run that hurt the last process cannot
 * keep the next one from answering.
 */
export async function startServer(config: Config, opts: StartOptions = {}): Promise<RunningServer> {
  const log = createLogger(config);
  const { db, release } = opts.opened ?? await openDatabase(config, opts.connect, log);
  const role = opts.role ?? 'all';
  const ctx: AppContext = { config, db, log, role };
  let app: FastifyInstance | undefined;
  let services: Services | undefined;
  let url = '';
  // The composition root's lifecycles, in reverse of their start order (src/lifecycle.ts), then the database.
  const shutdown = async () => {
    await services?.lifecycles.stop();
    await release();
  };
  try {
    services = composeServices(ctx, { clock: opts.clock, passwords: opts.passwords });
    const { accounts, sessions } = services;
    // The secrets' key before anything runs: a PostgreSQL deployment without WEFT_ENCRYPTION_KEY stops here.
    services.secrets.keys();
    // Each step is tried again while the database is away (a PostgreSQL restarting, connections cut).
    const boot = await startupStep(log, 'creating the first admin and workspace', () => accounts.ensureBootstrap());
    if (opts.announce) {
      // An admin without a password (just created, or from before the dashboard) gets a one-time one.
      const adminPassword = await startupStep(log, 'setting the first password', () => sessions.claimInitialPassword(boot.userId));
      const apiKey = boot.created
        ? (await startupStep(log, 'creating the bootstrap key', () => accounts.createKey({
          workspaceId: boot.workspaceId, userId: boot.userId, type: 'workspace', name: 'Bootstrap key',
        }))).secret
        : undefined;
      if (apiKey || adminPassword) {
        const adminEmail = (await startupStep(log, 'reading the admin', () => accounts.findUser(boot.userId)))?.email ?? config.dashboard.adminEmail;
        process.stdout.write(firstStartBanner({ workspaceId: boot.workspaceId, apiKey, adminEmail, adminPassword }));
      }
    }
    app = await buildApp(ctx, services);
    if (role === 'worker') await app.ready();
    else await app.listen({ port: config.port, host: config.host });
    const address = role === 'worker' ? null : app.server.address();
    const port = typeof address === 'object' && address ? address.port : config.port;
    const host = config.host === '0.0.0.0' || config.host === '::' ? '127.0.0.1' : config.host;
    url = `http://${host.includes(':') ? `[${host}]` : host}:${port}`;
    services.runs.setFallbackBaseUrl(url);
    // Workers, schedules and timers start once the process answers (the composition root decides which).
    await services.lifecycles.start();
  } catch (err) {
    await app?.close().catch(() => undefined);
    await shutdown();
    throw err;
  }
  let closing: Promise<void> | undefined;
  const started = app;
  const composed = services;
  // The CLI's way in while this process holds the embedded data directory (src/admin/channel.ts).
  const admin = config.databaseUrl || opts.connect?.inMemory ? undefined
    : await startAdminChannel({ ctx, services: composed, url }).catch(async (err: unknown) => {
      await started.close();
      await shutdown();
      throw err;
    });
  return {
    app: started,
    ctx,
    services: composed,
    url,
    close: () => {
      closing ??= (async () => {
        await admin?.close();
        await closeDraining(started);
        await shutdown();
      })();
      return closing;
    },
  };
}

/**
 * Stops accepting and waits for the requests in flight. A keep-alive connection whose request was
 * still running when closing began goes idle once it is answered, and would hold the close until its
 * idle timeout: such connections are closed as soon as they are idle.
 */
async function closeDraining(app: FastifyInstance): Promise<void> {
  const idle = setInterval(() => app.server.closeIdleConnections(), 100);
  try {
    await app.close();
  } finally {
    clearInterval(idle);
  }
}
