// The HTTP side of observability: one log line and one histogram sample per request (by route pattern,
// never the raw URL), a server span per request when tracing is on, and GET /metrics.
import { timingSafeEqual } from 'node:crypto';
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
  const given = Buffer.from(m[1].trim());
  const expected = Buffer.from(token);
  return given.length === expected.length && timingSafeEqual(given, expected);
}

/**
 * Registers the request hooks and GET /metrics. Call before the area plugins so that the hooks wrap
 * every route. `metricsToken`: when set, /metrics wants `Authorization: Bearer <token>`; else it is open.
 */
export function registerObservability(app: FastifyInstance, obs: Observability, opts: { metricsToken?: string }): void {
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
    schema: { tags: ['health'], summary: 'Prometheus metrics (text exposition format); Bearer token when WEFT_METRICS_TOKEN is set', security: [] },
    config: { auth: 'none' },
  }, async (request, reply) => {
    if (opts.metricsToken && !tokenMatches(request.headers.authorization, opts.metricsToken)) {
      throw new HttpError(401, 'Metrics token required: send Authorization: Bearer <WEFT_METRICS_TOKEN>', {}, { 'WWW-Authenticate': 'Bearer realm="metrics"' });
    }
    const body = await metrics.registry.metrics();
    return reply.header('content-type', metrics.registry.contentType).header('cache-control', 'no-store').send(body);
  });
}
