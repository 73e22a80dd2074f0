// The dashboard's one way to call the server: the public HTTP API with the session cookie. Non-GET
// requests carry the session's CSRF token; a 401 hands the user to the sign-in page.
import type { Method, PathParams, PathsWith, RequestBody, Success, paths } from './schema';

export class ApiError extends Error {
  readonly status: number;
  readonly body: unknown;
  constructor(status: number, message: string, body: unknown) {
    super(message);
    this.name = 'ApiError';
    this.status = status;
    this.body = body;
  }
}

export interface ApiFetchOptions {
  method?: string;
  body?: unknown;
  query?: Record<string, string | number | boolean | undefined>;
  /** Extra request headers (e.g. X-Execution-Mode). */
  headers?: Record<string, string>;
  /** Do not send the user to /sign-in on a 401 (the sign-in and session probes themselves). */
  allowUnauthorized?: boolean;
  signal?: AbortSignal;
}

let csrfToken: string | undefined;
let onUnauthorized: () => void = () => {
  const next = window.location.pathname + window.location.search;
  if (window.location.pathname !== '/sign-in') window.location.assign(`/sign-in?next=${encodeURIComponent(next)}`);
};

/** Set by the session provider whenever the session (and so its CSRF token) changes. */
export function setCsrfToken(token: string | undefined): void {
  csrfToken = token;
}

/** The session provider replaces the full-page redirect with a router navigation. */
export function setUnauthorizedHandler(handler: () => void): void {
  onUnauthorized = handler;
}

export function buildUrl(path: string, query?: ApiFetchOptions['query']): string {
  if (!query) return path;
  const params = new URLSearchParams();
  for (const [k, v] of Object.entries(query)) if (v !== undefined && v !== '') params.set(k, String(v));
  const qs = params.toString();
  return qs ? `${path}${path.includes('?') ? '&' : '?'}${qs}` : path;
}

/** The error text a server body carries: `{error: "..."}`, `{error: {message}}` (AI/v2 envelopes), or the status. */
export function errorMessage(body: unknown, status: number): string {
  if (body && typeof body === 'object' && 'error' in body) {
    const e = (body as { error: unknown }).error;
    if (typeof e === 'string') return e;
    if (e && typeof e === 'object' && 'message' in e && typeof (e as { message: unknown }).message === 'string') {
      return (e as { message: string }).message;
    }
  }
  if (typeof body === 'string' && body.trim()) return body.slice(0, 300);
  return `Request failed (${status})`;
}

/** A request's whole answer, for callers that need the status and headers (failures are not thrown). */
export interface RawResponse { status: number; headers: Headers; body: unknown }

export async function apiRaw(path: string, opts: ApiFetchOptions = {}): Promise<RawResponse> {
  const method = (opts.method ?? 'GET').toUpperCase();
  const headers: Record<string, string> = { accept: 'application/json', ...opts.headers };
  let body: BodyInit | undefined;
  if (opts.body instanceof FormData) body = opts.body;
  else if (opts.body !== undefined) {
    headers['content-type'] = 'application/json';
    body = JSON.stringify(opts.body);
  }
  if (method !== 'GET' && method !== 'HEAD' && csrfToken) headers['x-csrf-token'] = csrfToken;
  const res = await fetch(buildUrl(path, opts.query), { method, headers, body, credentials: 'same-origin', signal: opts.signal });
  const text = res.status === 204 ? '' : await res.text();
  let parsed: unknown = undefined;
  if (text) {
    try {
      parsed = JSON.parse(text);
    } catch {
      parsed = text;
    }
  }
  if (res.status === 401 && !opts.allowUnauthorized) onUnauthorized();
  return { status: res.status, headers: res.headers, body: parsed };
}

export async function apiFetch<T>(path: string, opts: ApiFetchOptions = {}): Promise<T> {
  const res = await apiRaw(path, opts);
  if (res.status >= 400) throw new ApiError(res.status, errorMessage(res.body, res.status), res.body);
  return res.body as T;
}

/** `{success: true, data}` envelopes of /api/v1 unwrapped. */
export async function apiData<T>(path: string, opts?: ApiFetchOptions): Promise<T> {
  const r = await apiFetch<{ data: T }>(path, opts);
  return r.data;
}

/** What `api()` takes besides the path: path parameters fill its `{name}` parts; the body is typed by the route. */
export type ApiOptions<P extends keyof paths, M extends Method> = Omit<ApiFetchOptions, 'method' | 'body'> & {
  method?: M;
  body?: RequestBody<P, M> | FormData;
} & ([PathParams<P, M>] extends [never | undefined] ? { params?: never } : { params: PathParams<P, M> });

/** `path` with each `{name}` replaced by its encoded parameter. */
export function fillPath(path: string, params: Record<string, string | number> | undefined): string {
  return path.replace(/\{(\w+)\}/g, (_, name: string) => {
    const value = params?.[name];
    if (value === undefined) throw new Error(`Missing path parameter "${name}" for ${path}`);
    return encodeURIComponent(String(value));
  });
}

/**
 * A call typed by the generated API schema: the path template and method pick the request body and the
 * successful answer's type, so a server change shows up as a type error in the page that uses it.
 */
export async function api<P extends PathsWith<M>, M extends Method = 'get'>(path: P, opts: ApiOptions<P, M>): Promise<Success<P, M>> {
  const { params, method, ...rest } = opts as ApiFetchOptions & { params?: Record<string, string | number> };
  return apiFetch<Success<P, M>>(fillPath(path, params), { ...rest, method: method ?? 'get' });
}
