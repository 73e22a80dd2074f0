// Builds the process's observability from its configuration (called by the composition root).
import http from 'node:http';
import type { AppContext } from '../context.js';
import type { Lifecycle } from '../lifecycle.js';
import { Observability } from './observer.js';
import type { ScrapeSources } from './metrics.js';
import { Tracing } from './tracing.js';
import { metricsAccess, metricsOffMessage, metricsRefusal } from './http.js';

export { Observability } from './observer.js';
export type { AiObserver, LimitObserver, Observer, RunObserver } from './observer.js';

const SERVICE_VERSION = '0.1.0';

/**
 * Metrics always (cheap; scraped on demand), traces only with an OTLP endpoint. Closed (traces flushed)
 * through the composition root's lifecycles; a worker's own /metrics listener is workerMetricsListener.
 */
export function createObservability(ctx: AppContext, sources: Omit<ScrapeSources, 'poolStats' | 'databaseActivity'>): Observability {
  const { config, db, log } = ctx;
  const o = config.observability;
  const tracing = o.otlpTracesUrl ? new Tracing({ url: o.otlpTracesUrl, serviceName: o.serviceName, serviceVersion: SERVICE_VERSION }) : undefined;
  const activity = db.activity;
  const obs = new Observability(log, {
    ...sources,
    poolStats: db.poolStats ? () => db.poolStats?.() : undefined,
    databaseActivity: activity ? () => activity.call(db) : undefined,
  }, tracing);
  if (tracing) log.info({ endpoint: o.otlpTracesUrl, serviceName: o.serviceName }, 'exporting traces over OTLP/HTTP');
  const access = metricsAccess(config.host, o.metricsToken);
  // Said once at start-up, by whichever listener would serve /metrics (a worker only with its own port).
  if (access.kind === 'off' && (ctx.role !== 'worker' || o.metricsPort)) log.warn({ host: config.host }, metricsOffMessage(config.host));
  return obs;
}

/**
 * A worker process has no HTTP API: with WEFT_METRICS_PORT it serves GET /metrics on a listener of its own,
 * started and stopped with the process's other lifecycles (undefined when there is none to run).
 */
export function workerMetricsListener(ctx: AppContext, obs: Observability): Lifecycle | undefined {
  const { config, log } = ctx;
  const o = config.observability;
  if (ctx.role !== 'worker' || !o.metricsPort) return undefined;
  const access = metricsAccess(config.host, o.metricsToken);
  let server: http.Server | undefined;
  return {
    name: 'worker metrics listener',
    start: () => {
      server = http.createServer((req, res) => {
        const path = (req.url ?? '').split('?')[0];
        if (req.method !== 'GET' || path !== '/metrics') {
          res.writeHead(404, { 'content-type': 'application/json' }).end(JSON.stringify({ error: 'Not found: this worker serves GET /metrics only' }));
          return;
        }
        const refused = metricsRefusal(access, req.headers.authorization);
        if (refused) {
          res.writeHead(refused.status, { 'content-type': 'application/json', ...refused.headers }).end(JSON.stringify({ error: refused.error }));
          return;
        }
        obs.metrics.registry.metrics().then(
          (body) => res.writeHead(200, { 'content-type': obs.metrics.registry.contentType, 'cache-control': 'no-store' }).end(body),
          (err: unknown) => {
            log.error({ err }, 'collecting metrics failed');
            res.writeHead(500, { 'content-type': 'application/json' }).end(JSON.stringify({ error: 'Collecting metrics failed' }));
          },
        );
      });
      server.on('error', (err) => log.error({ err, port: o.metricsPort }, 'the worker metrics listener failed'));
      server.listen(o.metricsPort, config.host, () => log.info({ port: o.metricsPort }, 'worker metrics at /metrics'));
    },
    stop: async () => {
      const listening = server;
      server = undefined;
      if (listening) await new Promise<void>((resolve) => listening.close(() => resolve()));
    },
  };
}
