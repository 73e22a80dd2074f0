import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { isDatabaseUnavailable } from '../db/database.js';
import type { ZodIssue } from './zod-issue.js';

/**
 * Error envelopes, chosen in one place. Routes pick a family through `config.errorFamily`:
 * - `v1` (default): `{error}` or `{error, details}` for 400s, details being zod-style issues;
 * - `execute`: like v1, but validation details are `{path: "a.b", message}` and the message is fixed;
 * - `coded`: `{error, code}` (jobs, usage-limits), code = message upper-cased with underscores;
 * - `ai`: `{error: {message, type, code}}` (the OpenAI-compatible gateway);
 * - `v2`: `{error: {code, message, details?}}` (Sim's v2 run API, `/api/v2`), code from the status.
 * Why they differ, and which routes use which: docs/architecture.md, Error envelopes.
 */
export type ErrorFamily = 'v1' | 'execute' | 'coded' | 'ai' | 'v2';

declare module 'fastify' {
  interface FastifyContextConfig {
    errorFamily?: ErrorFamily;
    /**
     * false on the legacy paths Sim's SDKs call (execute, workflow status, jobs, usage limits): they carry
     * no X-RateLimit-* headers, errors included (Sim's Python SDK 0.1.x calls int() on them). Retry-After stays.
     */
    rateLimitHeaders?: boolean;
  }
}

/** Members an error body may carry besides its message; each family shapes them (see `errorBody`). */
export interface ErrorExtra {
  /** Machine-readable code (`coded` and `ai` families, and conflicts such as EXECUTION_ID_CONFLICT); null in the AI family when the provider gave none. */
  code?: string | null;
  /** Validation issues of a 400. */
  details?: unknown[];
  /** AI family: the OpenAI error type and the offending parameter. */
  type?: string;
  param?: unknown;
  /** The id a conflict is about. */
  executionId?: string;
  requestId?: string;
  /** Refusals that may be retried: epoch ms when, seconds to wait, and a longer explanation. */
  retryAfter?: number;
  retryable?: boolean;
  retryAfterSeconds?: number;
  message?: string;
  /** The column and value a table write conflicts on. */
  column?: string;
  value?: unknown;
  /** The kind of write lock a table refused a change with (423). */
  lock?: string;
  /** v2 family only: the envelope's `details` (e.g. `{code: "WORKFLOW_NOT_DEPLOYED"}`); other families drop it. */
  v2Details?: Record<string, unknown>;
}

export class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly extra: ErrorExtra = {},
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
  }
}

export const badRequest = (message: string, details?: unknown[]) =>
  new HttpError(400, message, details ? { details } : {});

const aiTypes: Record<number, string> = {
  400: 'invalid_request_error',
  401: 'invalid_request_error',
  402: 'insufficient_quota',
  403: 'invalid_request_error',
  404: 'invalid_request_error',
  409: 'invalid_request_error',
  413: 'invalid_request_error',
  429: 'rate_limit_error',
};

function codeOf(message: string): string {
  return message.toUpperCase().replace(/[^A-Z0-9]+/g, '_').replace(/^_|_$/g, '');
}

/** Sim's v2 error codes, one per status (408 is the one mismatch: a timed-out execute is a BAD_REQUEST). */
const v2Codes: Record<number, string> = {
  400: 'BAD_REQUEST', 401: 'UNAUTHORIZED', 402: 'USAGE_LIMIT_EXCEEDED', 403: 'FORBIDDEN', 404: 'NOT_FOUND', 408: 'BAD_REQUEST',
  409: 'CONFLICT', 413: 'PAYLOAD_TOO_LARGE', 415: 'UNSUPPORTED_MEDIA_TYPE', 423: 'LOCKED', 429: 'RATE_LIMITED',
  499: 'CLIENT_CLOSED_REQUEST', 500: 'INTERNAL_ERROR', 503: 'SERVICE_UNAVAILABLE',
};

export const v2Code = (status: number): string => v2Codes[status] ?? (status >= 500 ? 'INTERNAL_ERROR' : 'BAD_REQUEST');

/** `details` of a v2 error: validation issues (400), the explicit v2 details, else the cause's code and run id. */
function v2Details(status: number, extra: ErrorExtra): unknown {
  if (extra.v2Details) return extra.v2Details;
  if (status === 400 && extra.details) return extra.details;
  const runId = extra.executionId !== undefined ? { runId: extra.executionId } : {};
  if (typeof extra.code === 'string') return { code: extra.code, ...runId };
  if (status === 429) return { code: 'RATE_LIMIT_EXCEEDED' };
  return extra.executionId !== undefined ? runId : undefined;
}

/** Shapes an error body for a family. `details` only survives on 400s. */
export function errorBody(
  family: ErrorFamily,
  status: number,
  message: string,
  extra: ErrorExtra = {},
): Record<string, unknown> {
  if (family === 'ai') {
    const code = typeof extra.code === 'string' ? extra.code : null;
    const type = typeof extra.type === 'string' ? extra.type : status >= 500 ? 'server_error' : (aiTypes[status] ?? 'invalid_request_error');
    return { error: { message, type, code, ...(extra.param !== undefined ? { param: extra.param } : {}) } };
  }
  if (family === 'v2') {
    const details = v2Details(status, extra);
    return { error: { code: v2Code(status), message, ...(details !== undefined ? { details } : {}) } };
  }
  const body: Record<string, unknown> = { error: message, ...extra };
  delete body.v2Details;
  if (family === 'coded' && body.code === undefined) body.code = codeOf(message);
  if (status !== 400) delete body.details;
  return body;
}

/** The challenge every v2 401 carries (as Sim's). */
export const V2_AUTHENTICATE = 'SimApiKey realm="Sim API", header="x-api-key"';

/** Sim's v2 answer to any path under /api/v2 that matches no route (auth is not checked first). */
export const V2_NOT_FOUND = { error: { code: 'NOT_FOUND', message: 'Not found' } };

const isRateLimitHeader = (name: string) => name.toLowerCase().startsWith('x-ratelimit-');

export function sendError(reply: FastifyReply, err: HttpError): FastifyReply {
  const cfg = reply.request.routeOptions.config;
  const family = cfg?.errorFamily ?? 'v1';
  // v2 routes already carry their request bucket's headers; legacy paths carry none.
  const dropRateHeaders = family === 'v2' || cfg?.rateLimitHeaders === false;
  for (const [k, v] of Object.entries(err.headers)) if (!dropRateHeaders || !isRateLimitHeader(k)) reply.header(k, v);
  if (family === 'v2') {
    reply.header('cache-control', 'private, no-store');
    if (err.status === 401) reply.header('www-authenticate', V2_AUTHENTICATE);
  }
  return reply.code(err.status).send(errorBody(family, err.status, err.message, err.extra));
}

/** Seconds a caller is told to wait when the database or Redis is away. */
const UNAVAILABLE_RETRY_AFTER_S = 2;

/** 503 with Retry-After: the database or Redis cannot be reached right now. */
export function serviceUnavailable(): HttpError {
  return new HttpError(503, 'Service temporarily unavailable: the database cannot be reached. Retry shortly.',
    { code: 'SERVICE_UNAVAILABLE', retryable: true, retryAfterSeconds: UNAVAILABLE_RETRY_AFTER_S },
    { 'retry-after': String(UNAVAILABLE_RETRY_AFTER_S) });
}

/** A database connection lost or refused, or Redis unreachable (ioredis gave up on the command). */
function isBackingStoreUnavailable(err: unknown): boolean {
  if (isDatabaseUnavailable(err)) return true;
  const e = err as { name?: unknown; message?: unknown };
  return e?.name === 'MaxRetriesPerRequestError' || (typeof e?.message === 'string' && /Stream isn't writeable and enableOfflineQueue options is false/.test(e.message));
}

function validationIssues(err: FastifyError): ZodIssue[] {
  const v = (err as unknown as { validation?: unknown[] }).validation ?? [];
  return v.map((raw) => {
    const i = raw as { message?: string; instancePath?: string; keyword?: string };
    const path = (i.instancePath ?? '').split('/').filter(Boolean).map((seg) => (/^\d+$/.test(seg) ? Number(seg) : seg));
    return { code: i.keyword ?? 'custom', path, message: i.message ?? 'Invalid value' };
  });
}

function toHttpError(err: FastifyError, request: FastifyRequest): HttpError {
  if (err instanceof HttpError) return err;
  const family = request.routeOptions.config?.errorFamily ?? 'v1';
  if ((err as { validation?: unknown }).validation) {
    const issues = validationIssues(err);
    const where = (err as { validationContext?: string }).validationContext;
    if (family === 'execute') {
      return new HttpError(400, 'Invalid request body', {
        details: issues.map((i) => ({ path: i.path.join('.'), message: i.message })),
      });
    }
    const first = issues[0];
    if (family === 'v2') return new HttpError(400, first?.message ?? 'Invalid request', { details: issues });
    const location = first && first.path.length > 0 ? `${first.path.join('.')}: ` : where && where !== 'body' ? `${where}: ` : '';
    return new HttpError(400, first ? `${location}${first.message}` : 'Invalid request', { details: issues });
  }
  switch (err.code) {
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return new HttpError(400, family === 'execute' ? 'Invalid JSON in request body' : 'Request body must be valid JSON');
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      if (family === 'v2') return new HttpError(413, 'Request body is too large');
      if (family === 'execute') return new HttpError(413, 'Workflow execution request body exceeds maximum size');
      return new HttpError(413, `Request body exceeds the maximum allowed size of ${request.routeOptions.bodyLimit ?? 10485760} bytes`);
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return new HttpError(415, 'Unsupported Content-Type: send application/json');
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
      return new HttpError(400, 'Invalid Content-Length');
  }
  if (err instanceof SyntaxError) return new HttpError(400, 'Request body must be valid JSON');
  if (isBackingStoreUnavailable(err)) {
    // Not a bug of the request: the database (or Redis) is away, restarting or cut the connection. A
    // read was already retried once on a fresh connection; a write that met a lost connection did not
    // commit, or committed exactly once (a transaction): retry with the same X-Execution-Id.
    request.log.warn({ err }, 'backing store unavailable');
    return serviceUnavailable();
  }
  if (typeof err.statusCode === 'number' && err.statusCode >= 400 && err.statusCode < 500) {
    return new HttpError(err.statusCode, err.message);
  }
  request.log.error({ err }, 'unhandled error');
  return new HttpError(500, 'Internal server error', { requestId: request.id });
}

/** Route paths by method, compiled to patterns (`:param` one segment), to tell 404 from 405. */
class RouteMethods {
  private readonly routes: { method: string; pattern: RegExp }[] = [];

  add(methods: string | string[], url: string): void {
    // A catch-all (the dashboard's pages, static files) exists for every path: it says nothing about this one.
    if (url.includes('*')) return;
    const source = url.split('/').map((seg) => (seg.startsWith(':') ? '[^/]+' : seg.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'))).join('/');
    const pattern = new RegExp(`^${source}/?$`);
    for (const method of Array.isArray(methods) ? methods : [methods]) this.routes.push({ method, pattern });
  }

  /** The methods whose routes match `path` (empty: no route has this path). */
  allowed(path: string): string[] {
    return [...new Set(this.routes.filter((r) => r.pattern.test(path)).map((r) => r.method))];
  }
}

/**
 * The answer to a request no route matches: 405 with `Allow` when the path exists under other methods (as the
 * reference's framework answers), else 404 (Sim's v2 envelope under /api/v2, else the family's).
 */
function sendRouteNotFound(request: FastifyRequest, reply: FastifyReply, routes: RouteMethods): FastifyReply {
  const path = request.url.split('?')[0] ?? '';
  const v2 = path === '/api/v2' || path.startsWith('/api/v2/');
  const allowed = routes.allowed(path).filter((m) => m !== 'HEAD');
  if (allowed.length > 0 && path.startsWith('/api/')) {
    reply.code(405).header('allow', allowed.join(', '));
    if (v2) return reply.header('cache-control', 'private, no-store').send({ error: { code: 'METHOD_NOT_ALLOWED', message: 'Method not allowed' } });
    return reply.send(errorBody('v1', 405, `Method ${request.method} is not allowed on ${path}`));
  }
  if (v2) {
    return reply.code(404).header('cache-control', 'private, no-store').send(V2_NOT_FOUND);
  }
  const family: ErrorFamily = request.url.startsWith('/api/v1/ai/') ? 'ai' : 'v1';
  return reply.code(404).send(errorBody(family, 404, `Route ${request.method} ${path} not found`));
}

export function registerErrorHandling(app: FastifyInstance): void {
  const routes = new RouteMethods();
  app.addHook('onRoute', (route) => routes.add(route.method, route.url));
  app.setErrorHandler((err: FastifyError, request, reply) => {
    // A body that cannot be read, sent to a path that does not exist: the path is what is wrong.
    if (request.is404) return sendRouteNotFound(request, reply, routes);
    const httpErr = toHttpError(err, request);
    if (httpErr.status >= 500 && !(err instanceof HttpError)) {
      // already logged in toHttpError
    } else if (httpErr.status >= 500) {
      request.log.error({ err }, httpErr.message);
    }
    return sendError(reply, httpErr);
  });
  app.setNotFoundHandler((request, reply) => sendRouteNotFound(request, reply, routes));
}
