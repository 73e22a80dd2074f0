import type { FastifyInstance } from 'fastify';
import { buildApp } from './app.js';
import type { Config } from './config.js';
import type { AppContext } from './context.js';
import { createKey, ensureBootstrap } from './accounts/service.js';
import { createContext, createLogger, openDatabase } from './runtime.js';
import type { ConnectOptions } from './db/connect.js';

export interface RunningServer {
  app: FastifyInstance;
  ctx: AppContext;
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
}

export async function startServer(config: Config, opts: StartOptions = {}): Promise<RunningServer> {
  const log = createLogger(config);
  const { db, release } = await openDatabase(config, opts.connect);
  const role = opts.role ?? 'all';
  const ctx = createContext(config, db, log, role);
  let app: FastifyInstance | undefined;
  try {
    const boot = await ensureBootstrap(db, config.defaultPlan);
    if (boot.created && opts.announce) {
      const { secret } = await createKey(db, { workspaceId: boot.workspaceId, userId: boot.userId, type: 'workspace', name: 'Bootstrap key' });
      process.stdout.write(
        [
          '',
          '================================================================',
          ' Weft first start: created the admin user and workspace "default"',
          ` Workspace id:           ${boot.workspaceId}`,
          ` Workspace API key:      ${secret}`,
          ' This key is shown once. Send it as the X-API-Key header.',
          '================================================================',
          '',
        ].join('\n') + '\n',
      );
    }
    app = await buildApp(ctx);
    if (role === 'worker') await app.ready();
    else await app.listen({ port: config.port, host: config.host });
  } catch (err) {
    await app?.close().catch(() => undefined);
    for (const hook of ctx.onClose.reverse()) await hook().catch(() => undefined);
    await release();
    throw err;
  }
  const address = role === 'worker' ? null : app.server.address();
  const port = typeof address === 'object' && address ? address.port : config.port;
  const host = config.host === '0.0.0.0' || config.host === '::' ? '127.0.0.1' : config.host;
  ctx.publicUrl = `http://${host.includes(':') ? `[${host}]` : host}:${port}`;
  let closing: Promise<void> | undefined;
  const started = app;
  return {
    app: started,
    ctx,
    url: `http://${host.includes(':') ? `[${host}]` : host}:${port}`,
    close: () => {
      closing ??= (async () => {
        await started.close();
        for (const hook of [...ctx.onClose].reverse()) await hook().catch((err) => log.error({ err }, 'shutdown hook failed'));
        await release();
      })();
      return closing;
    },
  };
}
