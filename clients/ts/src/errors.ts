// Typed errors. Weft answers errors in a few envelopes (see the README's "Errors"): `{error, details?}`,
// `{error, code}`, the AI gateway's `{error: {message, type, code}}` and the v2 run API's
// `{error: {code, message, details?}}`. WeftApiError reads all of them into one shape.

/** A non-2xx answer of the Weft API (or an error event in the middle of an AI stream). */
export class WeftApiError extends Error {
  override readonly name = 'WeftApiError';
  /** HTTP status (a mid-stream AI error, sent after the 200, is reported as 502). */
  readonly status: number;
  /** Machine-readable code when the body carries one (e.g. `RATE_LIMIT_EXCEEDED`, `NOT_FOUND`, `insufficient_quota`). */
  readonly code: string | undefined;
  /** Validation issues of a 400 (`[{path, message, ...}]`), or the v2 envelope's details. */
  readonly details: unknown;
  /** The request id: the X-Request-Id header (send your own to correlate with the server's logs). */
  readonly requestId: string | undefined;
  /** Seconds to wait before retrying (Retry-After header, else the body's retryAfterSeconds, else the time until its epoch-ms retryAfter), when given. */
  readonly retryAfter: number | undefined;
  /** The parsed error body as the server sent it. */
  readonly body: unknown;

  constructor(init: { status: number; message: string; code?: string; details?: unknown; requestId?: string; retryAfter?: number; body?: unknown }) {
    super(init.message);
    this.status = init.status;
    this.code = init.code;
    this.details = init.details;
    this.requestId = init.requestId;
    this.retryAfter = init.retryAfter;
    this.body = init.body;
  }

  /** Reads an error answer: its status, headers and (already parsed) body. */
  static from(response: Pick<Response, 'status' | 'statusText' | 'headers'>, body: unknown): WeftApiError {
    const fields = errorFields(body);
    const header = response.headers.get('retry-after');
    return new WeftApiError({
      status: response.status,
      message: fields.message ?? (response.statusText || `HTTP ${response.status}`),
      code: fields.code,
      details: fields.details,
      requestId: response.headers.get('x-request-id') ?? fields.requestId,
      retryAfter: parseRetryAfter(header) ?? fields.retryAfter,
      body,
    });
  }
}

/** A run that ended without completing (failed, timed out or cancelled), met by execute-and-wait or resume-and-wait. */
export class WeftRunError extends Error {
  override readonly name = 'WeftRunError';
  constructor(
    message: string,
    readonly executionId: string | undefined,
    /** `failed`, `cancelled` or `timed_out` (as far as the answer tells). */
    readonly status: 'failed' | 'cancelled' | 'timed_out',
    /** The answer the outcome was read from (a sync error body or the job). */
    readonly raw: unknown,
  ) {
    super(message);
  }
}

/** A wait (job polling, execute-and-wait) ran past its timeout. */
export class WeftTimeoutError extends Error {
  override readonly name = 'WeftTimeoutError';
  constructor(message: string, readonly jobId?: string) {
    super(message);
  }
}

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);
const str = (v: unknown): string | undefined => (typeof v === 'string' && v !== '' ? v : undefined);
const num = (v: unknown): number | undefined => (typeof v === 'number' && Number.isFinite(v) && v >= 0 ? v : undefined);

function errorFields(body: unknown): { message?: string; code?: string; details?: unknown; requestId?: string; retryAfter?: number } {
  if (typeof body === 'string') return { message: str(body.trim().slice(0, 500)) };
  if (!isObj(body)) return {};
  const e = body.error;
  // {error: {message, type, code}} (AI) and {error: {code, message, details}} (v2).
  if (isObj(e)) {
    return { message: str(e.message), code: str(e.code) ?? str(e.type), details: e.details ?? (e.param !== undefined ? { param: e.param } : undefined) };
  }
  return {
    message: str(e) ?? str(body.message),
    code: str(body.code),
    details: body.details,
    requestId: str(body.requestId),
    // retryAfterSeconds is the wait; a v1 429's retryAfter is the refill time in epoch milliseconds.
    retryAfter: num(body.retryAfterSeconds) ?? untilEpochMs(num(body.retryAfter)),
  };
}

/** Whole seconds from now until an epoch-milliseconds time (at least 0). */
function untilEpochMs(at: number | undefined): number | undefined {
  return at === undefined ? undefined : Math.max(0, Math.ceil((at - Date.now()) / 1000));
}

/** Retry-After: delta-seconds or an HTTP date. */
function parseRetryAfter(value: string | null): number | undefined {
  if (!value) return undefined;
  if (/^\d+$/.test(value.trim())) return Number(value.trim());
  const at = Date.parse(value);
  return Number.isNaN(at) ? undefined : Math.max(0, Math.ceil((at - Date.now()) / 1000));
}
