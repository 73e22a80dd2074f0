import type { Agent, Dispatcher, request } from 'undici';
import { readSse, SseLimitError, type SseEvent } from '../sse.js';
import { ProviderError, type ProviderName } from './types.js';

/**
 * A provider's answer: its status and its body, read once (whole with `readJson`, or as events with
 * `upstreamEvents`).
 */
export interface UpstreamResponse {
  status: number;
  body: Dispatcher.ResponseData['body'];
}

/**
 * One connection pool for every provider call, kept alive between requests. undici's `request` rather
 * than `fetch`: the gateway's own overhead is what it adds to the provider's time, and `fetch`'s WHATWG
 * streams and Response objects cost more than the rest of the gateway's path (measured in bench/RESULTS.md).
 */
// Loaded on the first provider call (undici is 110 modules, about 5 MB of heap and 17 MB resident): an
// instance that serves no gateway request never carries it (docs/architecture.md, "Start-up").
interface UpstreamClient { request: typeof request; agent: Agent }
let upstream: UpstreamClient | undefined;
let loadingUpstream: Promise<UpstreamClient> | undefined;
function upstreamClient(): Promise<UpstreamClient> {
  loadingUpstream ??= import('undici').then((u) => {
    upstream = { request: u.request, agent: new u.Agent({ keepAliveTimeout: 30_000, keepAliveMaxTimeout: 600_000, connections: 256 }) };
    return upstream;
  });
  loadingUpstream.catch(() => {
    loadingUpstream = undefined; // try again on the next call rather than keep a failure
  });
  return loadingUpstream;
}

/** POSTs JSON to a provider; a non-2xx answer or a network failure becomes a ProviderError. */
export async function postJson(
  provider: ProviderName,
  url: string,
  headers: Record<string, string>,
  body: unknown,
  signal: AbortSignal,
): Promise<UpstreamResponse> {
  return send(provider, url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers },
    body: JSON.stringify(body),
  }, signal);
}

export async function getJson(provider: ProviderName, url: string, headers: Record<string, string>, signal: AbortSignal): Promise<unknown> {
  return readJson(provider, await send(provider, url, { method: 'GET', headers: { accept: 'application/json', ...headers } }, signal));
}

async function send(
  provider: ProviderName, url: string, init: { method: 'GET' | 'POST'; headers: Record<string, string>; body?: string }, signal: AbortSignal,
): Promise<UpstreamResponse> {
  let res: Dispatcher.ResponseData;
  try {
    const client = upstream ?? (await upstreamClient());
    res = await client.request(url, { ...init, signal, dispatcher: client.agent });
  } catch (err) {
    throw networkError(provider, err, signal);
  }
  if (res.statusCode < 200 || res.statusCode > 299) throw await errorFromResponse(provider, { status: res.statusCode, body: res.body });
  return { status: res.statusCode, body: res.body };
}

/**
 * The largest whole (non-streamed) answer read from a provider: n (at most 8) completions of a large
 * max_tokens fit well within it. Read whole, a 400 MB answer took the process to 1.5 GB.
 */
export const MAX_UPSTREAM_BODY_BYTES = 32 * 1024 * 1024;
/** An error answer is read only this far: its message is all the gateway keeps of it. */
const MAX_ERROR_BODY_BYTES = 64 * 1024;

/**
 * The body as text, read chunk by chunk, at most `limit` bytes of it: past them the connection is dropped, and
 * the text is what came before (or '' unless `keepPrefix`).
 */
async function readBounded(body: UpstreamResponse['body'], limit: number, keepPrefix = false): Promise<{ text: string; truncated: boolean }> {
  const parts: Buffer[] = [];
  let bytes = 0;
  let truncated = false;
  for await (const chunk of body as AsyncIterable<Buffer>) {
    if (bytes + chunk.length > limit) {
      parts.push(chunk.subarray(0, limit - bytes));
      bytes = limit;
      truncated = true;
      body.destroy();
      if (!keepPrefix) return { text: '', truncated };
      break;
    }
    bytes += chunk.length;
    parts.push(chunk);
  }
  return { text: Buffer.concat(parts, bytes).toString('utf8'), truncated };
}

export async function readJson(provider: ProviderName, res: UpstreamResponse): Promise<unknown> {
  let body: { text: string; truncated: boolean };
  try {
    body = await readBounded(res.body, MAX_UPSTREAM_BODY_BYTES);
  } catch (err) {
    throw new ProviderError(provider, 0, `Reading the ${provider} response failed: ${(err as Error).message}`);
  }
  if (body.truncated) {
    throw new ProviderError(provider, 502, `The ${provider} provider answered with a body larger than ${MAX_UPSTREAM_BODY_BYTES / 1024 / 1024} MiB`);
  }
  try {
    return JSON.parse(body.text) as unknown;
  } catch {
    throw new ProviderError(provider, res.status, `The ${provider} provider answered with a body that is not JSON`);
  }
}

export function networkError(provider: ProviderName, err: unknown, signal: AbortSignal): ProviderError {
  if (signal.aborted) {
    const reason = signal.reason as { name?: string } | undefined;
    if (reason?.name === 'TimeoutError') return new ProviderError(provider, 0, `The ${provider} provider did not answer in time`, undefined, 'provider_timeout');
    return new ProviderError(provider, 0, 'The request was cancelled', undefined, 'cancelled');
  }
  // fetch wraps the socket's error in `cause`; undici's request throws it with its own `code`.
  const e = err as { code?: string; message?: string; cause?: { code?: string; message?: string } };
  const why = e.cause?.code ?? e.code ?? e.cause?.message ?? e.message ?? 'unknown error';
  return new ProviderError(provider, 0, `Could not reach the ${provider} provider (${why})`);
}

export async function errorFromResponse(provider: ProviderName, res: UpstreamResponse): Promise<ProviderError> {
  let text = '';
  try {
    // Past the bound the message is not JSON any more: its first 300 characters stand in below.
    text = (await readBounded(res.body, MAX_ERROR_BODY_BYTES, true)).text;
  } catch {
    // keep the status alone
  }
  let message = '';
  let type: string | undefined;
  let code: string | undefined;
  try {
    const body = JSON.parse(text) as { error?: unknown; message?: unknown };
    const e = body.error;
    if (e && typeof e === 'object') {
      const o = e as { message?: unknown; type?: unknown; code?: unknown; status?: unknown };
      if (typeof o.message === 'string') message = o.message;
      if (typeof o.type === 'string') type = o.type;
      if (typeof o.code === 'string') code = o.code;
      else if (typeof o.status === 'string') code = o.status;
    } else if (typeof e === 'string') {
      message = e;
    } else if (typeof body.message === 'string') {
      message = body.message;
    }
  } catch {
    message = text.slice(0, 300);
  }
  return new ProviderError(provider, res.status, message || `The ${provider} provider answered ${res.status}`, type, code);
}

/** SSE events of a streaming answer; a broken connection becomes a ProviderError. */
export async function* upstreamEvents(provider: ProviderName, res: UpstreamResponse, signal: AbortSignal): AsyncGenerator<SseEvent> {
  try {
    for await (const ev of readSse(res.body)) yield ev;
  } catch (err) {
    if (err instanceof ProviderError) throw err;
    if (err instanceof SseLimitError) {
      throw new ProviderError(provider, 502, `The ${provider} provider sent a stream ${err.what} longer than ${err.limitChars} characters`);
    }
    throw networkError(provider, err, signal);
  }
}

export function parseEventJson(provider: ProviderName, data: string): unknown {
  try {
    return JSON.parse(data) as unknown;
  } catch {
    throw new ProviderError(provider, 502, `The ${provider} provider sent a stream event that is not JSON`);
  }
}

/** Message text: a string, or the text parts of a content array joined. */
export function textOf(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  let out = '';
  for (const part of content) {
    if (part && typeof part === 'object' && (part as { type?: unknown }).type === 'text') {
      const t = (part as { text?: unknown }).text;
      if (typeof t === 'string') out += (out ? '\n' : '') + t;
    }
  }
  return out;
}

export const nowSeconds = (): number => Math.floor(Date.now() / 1000);
