// The HTTP side of observability: one log line and one histogram sample per request (by route pattern,
// never the raw URL), a server span per request when tracing is on, and GET /metrics.
import { constantTimeEqual } from '../constant-time.js';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { Span } from '@opentelemetry/api';
import { HttpError } from '../http/errors.js';
import type { Observability } from './observer.js';

/** Probes and scrapes: their lines go out at debug, so that the info log shows traffic, not polling. */
const QUIET_ROUTES = new Set(['/healthz', '/readyz', '/metrics']);

/** The workspace a request acts in, when it says: the workspace key's, else a `workspaceId` param or query. */
function workspaceOf(request: FastifyRequest): string | undefined {
  if (request.auth?.keyWorkspaceId) return request.auth.keyWorkspaceId;
  const fromParams = (request.params as { workspaceId?: unknown } | undefined)?.workspaceId;
  if (typeof fromParams === 'string') return fromParams;
  const fromQuery = (request.query as { workspaceId?: unknown } | undefined)?.workspaceId;
  return typeof fromQuery === 'string' ? fromQuery : undefined;
}

/** `Authorization: Bearer <token>`, compared in constant time. */
export function tokenMatches(header: string | undefined, token: string): boolean {
  const m = header ? /^Bearer\s+(.+)$/i.exec(header) : null;
  if (!m?.[1]) return false;
  return constantTimeEqual(m[1].trim(), token);
}

/** A listener address only this machine reaches: `localhost`, 127.0.0.0/8, ::1 (also IPv4-mapped). */
export function isLoopbackHost(host: string): boolean {
  const h = host.trim().toLowerCase().replace(/^\[(.*)\]$/, '$1');
  if (h === 'localhost' || h === '::1' || h === '0:0:0:0:0:0:0:1') return true;
  const v4 = h.startsWith('::ffff:') ? h.slice(7) : h;
  return /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(v4);
}

/**
 * Who may read GET /metrics (per-route counts and timings, queue and pool figures): holders of
 * WEFT_METRICS_TOKEN when it is set; without it, anyone only while the listener is on loopback (only
 * this machine reaches it); a listener others reach and no token serves no metrics at all.
 */
export type MetricsAccess = { kind: 'token'; token: string } | { kind: 'open' } | { kind: 'off'; host: string };

export function metricsAccess(listenHost: string, token: string | undefined): MetricsAccess {
  if (token) return { kind: 'token', token };
  return isLoopbackHost(listenHost) ? { kind: 'open' } : { kind: 'off', host: listenHost };
}

/** Why a scrape is refused (status, message, headers), or undefined when it may read the metrics. */
export function metricsRefusal(access: MetricsAccess, authorization: string | undefined): { status: number; error: string; headers: Record<string, string> } | undefined {
  if (access.kind === 'open') return undefined;
  if (access.kind === 'off') {
    return { status: 403, error: `Metrics are off: this server listens on ${access.host}, not on loopback, and WEFT_METRICS_TOKEN is not set`, headers: {} };
  }
  if (tokenMatches(authorization, access.token)) return undefined;
  return {
    status: 401, error: 'Metrics token required: send Authorization: Bearer <WEFT_METRICS_TOKEN>', headers: { 'WWW-Authenticate': 'Bearer realm="metrics"' },
  };
}

/** The start-up line that says how to turn metrics on, when they are off. */
export function metricsOffMessage(host: string): string {
  return `GET /metrics is off: the listener is on ${host}, which is not a loopback address, and WEFT_METRICS_TOKEN is not set. ` +
    'Set WEFT_METRICS_TOKEN and scrape with Authorization: Bearer <token> (or listen on 127.0.0.1).';
}

/**
 * Registers the request hooks and GET /metrics. Call before the area plugins so that the hooks wrap
 * every route. `metrics`: who may read /metrics (see MetricsAccess).
 */
export function registerObservability(app: FastifyInstance, obs: Observability, opts: { metrics: MetricsAccess }): void {
  const { metrics, tracing } = obs;
  const spans = new WeakMap<FastifyRequest, Span>();
  if (tracing) {
    app.addHook('onRequest', (request, _reply, done) => {
      spans.set(request, tracing.startRequest(request.method, request.url.split('?')[0] ?? '', request.headers));
      done();
    });
    // After body parsing and validation: the handler and all it awaits run with the request's span current.
    app.addHook('preHandler', (request, _reply, done) => {
      const span = spans.get(request);
      if (span) tracing.within(span, done);
      else done();
    });
  }

  app.addHook('onResponse', (request, reply, done) => {
    const route = request.is404 ? undefined : request.routeOptions.url;
    const status = reply.statusCode;
    const durationMs = reply.elapsedTime;
    metrics.httpDuration.observe({ method: request.method, route: route ?? 'unmatched', status }, durationMs / 1000);
    const workspaceId = workspaceOf(request);
    const line = {
      method: request.method, route: route ?? null, path: request.url.split('?')[0], status,
      durationMs: Math.round(durationMs * 100) / 100, ...(workspaceId ? { workspaceId } : {}),
    };
    if (route && QUIET_ROUTES.has(route)) request.log.debug(line, 'request');
    else request.log.info(line, 'request');
    const span = spans.get(request);
    if (span && tracing) tracing.endRequest(span, { method: request.method, route, status, requestId: request.id, workspaceId });
    done();
  });

  app.get('/metrics', {
    schema: {
      tags: ['health'], security: [],
      summary: 'Prometheus metrics (text exposition format); Bearer token when WEFT_METRICS_TOKEN is set, which a non-loopback listener needs',
    },
    config: { auth: 'none' },
  }, async (request, reply) => {
    const refused = metricsRefusal(opts.metrics, request.headers.authorization);
    if (refused) throw new HttpError(refused.status, refused.error, {}, refused.headers);
    const body = await metrics.registry.metrics();
    return reply.header('content-type', metrics.registry.contentType).header('cache-control', 'no-store').send(body);
  });
}
