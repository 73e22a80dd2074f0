// Cross-origin calls of the execute route. Clients of the reference service call
// `POST /api/workflows/{id}/execute` from pages on other origins with an API key in X-API-Key, so that route
// (and only it) answers CORS: any origin by default, or the operator's list (WEFT_EXECUTE_CORS_ORIGINS).
// Credentials are never allowed: a browser then neither sends the dashboard's cookie on a preflighted call nor
// lets a page read an answer that rode on one, so only a caller holding a key gets anything
// (docs/architecture.md, "Cross-origin execute").
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** The route answers cross-origin callers (CORS headers on every answer, errors included). */
    crossOrigin?: boolean;
  }
}

/** `*`: any origin; otherwise the origins allowed (empty: none, CORS off). */
export type CrossOriginPolicy = '*' | readonly string[];

/** Request headers a cross-origin caller may send (what execute reads). */
const ALLOWED_HEADERS = [
  'Content-Type', 'X-API-Key', 'X-Execution-Id', 'X-Execution-Mode', 'X-Execution-Timeout-Seconds', 'X-Stream-Response',
  'Idempotency-Key', 'X-Request-Id',
].join(', ');

/** Answer headers a cross-origin page may read besides the CORS-safelisted ones. */
const EXPOSED_HEADERS = [
  'Retry-After', 'X-RateLimit-Limit', 'X-RateLimit-Remaining', 'X-RateLimit-Reset', 'X-Request-Id', 'X-Run-Id', 'X-Execution-Id',
].join(', ');

/** Methods a preflight allows (the reference's list). */
const ALLOWED_METHODS = 'GET, POST, OPTIONS, PUT';

/** A day: browsers cache a preflight's answer at most this long anyway (Chromium: 2 hours). */
const PREFLIGHT_MAX_AGE_SECONDS = '86400';

/** The value of Access-Control-Allow-Origin for this request, or undefined when its origin is not allowed. */
function allowedOrigin(policy: CrossOriginPolicy, origin: string | undefined): string | undefined {
  if (!origin) return undefined;
  if (policy === '*') return '*';
  return policy.includes(origin.toLowerCase()) ? origin : undefined;
}

/** Adds `Origin` to the answer's Vary (a Response block may have set one of its own), once. */
function varyByOrigin(reply: FastifyReply): void {
  const current = reply.getHeader('vary');
  const listed = (Array.isArray(current) ? current.join(',') : String(current ?? '')).split(',').map((v) => v.trim()).filter(Boolean);
  if (!listed.some((v) => v === '*' || v.toLowerCase() === 'origin')) reply.header('vary', [...listed, 'Origin'].join(', '));
}

function grant(policy: CrossOriginPolicy, request: FastifyRequest, reply: FastifyReply): boolean {
  // A listed origin is echoed, so caches must key the answer by it.
  if (policy !== '*') varyByOrigin(reply);
  const origin = request.headers.origin;
  const allowed = allowedOrigin(policy, typeof origin === 'string' ? origin : undefined);
  if (!allowed) return false;
  reply.header('access-control-allow-origin', allowed);
  reply.header('access-control-expose-headers', EXPOSED_HEADERS);
  return true;
}

/**
 * Adds CORS headers to every answer of routes configured `crossOrigin: true` (set before authentication, so a
 * 401 is readable too; a streamed answer copies them), and answers their preflights at `paths`.
 */
export function registerCrossOrigin(app: FastifyInstance, policy: CrossOriginPolicy, paths: readonly string[]): void {
  if (policy !== '*' && policy.length === 0) return;
  app.addHook('onRequest', async (request, reply) => {
    if (request.routeOptions.config?.crossOrigin) grant(policy, request, reply);
  });
  // A Response block's own Vary replaces the one set above: it is extended again before the answer goes.
  if (policy !== '*') {
    app.addHook('onSend', async (request, reply, payload) => {
      if (request.routeOptions.config?.crossOrigin) varyByOrigin(reply);
      return payload;
    });
  }
  for (const url of paths) {
    app.options(url, { schema: { hide: true }, config: { auth: 'none', rateLimitHeaders: false } }, async (request, reply) => {
      if (grant(policy, request, reply)) {
        reply.header('access-control-allow-methods', ALLOWED_METHODS);
        reply.header('access-control-allow-headers', ALLOWED_HEADERS);
        reply.header('access-control-max-age', PREFLIGHT_MAX_AGE_SECONDS);
      }
      return reply.code(204).send();
    });
  }
}

/**
 * WEFT_EXECUTE_CORS_ORIGINS: `*` (any origin), `off` (none), or origins separated by commas
 * (`https://app.example.com, http://localhost:5173`). An error message for anything else.
 */
export function parseCrossOriginPolicy(value: string): CrossOriginPolicy | { error: string } {
  const text = value.trim();
  if (text === '*') return '*';
  if (text === '' || text.toLowerCase() === 'off') return [];
  const origins: string[] = [];
  for (const part of text.split(',').map((p) => p.trim()).filter(Boolean)) {
    let url: URL | undefined;
    try {
      url = new URL(part);
    } catch {
      url = undefined;
    }
    const bare = url && (url.protocol === 'http:' || url.protocol === 'https:') && url.pathname === '/' && !url.search && !url.hash && !url.username
      && !url.password;
    if (!url || !bare) return { error: `"${part}" is not an origin (scheme://host[:port], no path); use *, off, or origins separated by commas` };
    origins.push(url.origin);
  }
  return origins;
}
