import { HttpError } from '../http/errors.js';
import { ProviderError, UnsupportedFeatureError } from './providers/types.js';

// How provider failures become the gateway's errors (the AI error envelope, docs/ai-gateway.md).

/** Maps a provider failure to the gateway's HTTP error. */
export function providerHttpError(err: ProviderError): HttpError {
  const who = `${err.provider} provider`;
  if (err.upstreamCode === 'cancelled') return new HttpError(499, 'The client closed the request', { type: 'invalid_request_error', code: 'cancelled' });
  if (err.status === 0) {
    const timeout = err.upstreamCode === 'provider_timeout';
    return new HttpError(timeout ? 504 : 502, err.message, { type: 'server_error', code: timeout ? 'provider_timeout' : 'provider_unavailable' });
  }
  if (err.status === 400 || err.status === 422 || err.status === 413) {
    return new HttpError(400, `The ${who} refused the request: ${err.message}`, { type: 'invalid_request_error', code: err.upstreamCode ?? null });
  }
  if (err.status === 429) return new HttpError(429, `The ${who} is rate limiting: ${err.message}`, { type: 'rate_limit_error', code: 'provider_rate_limited' });
  if (err.status === 404) return new HttpError(404, `The ${who} does not know this model: ${err.message}`, { type: 'invalid_request_error', code: 'model_not_found' });
  if (err.status === 401 || err.status === 403) {
    return new HttpError(502, `The ${who} rejected the gateway's credentials (${err.status}): ${err.message}`, { type: 'server_error', code: 'provider_auth_failed' });
  }
  return new HttpError(502, `The ${who} failed (${err.status}): ${err.message}`, { type: 'server_error', code: 'provider_error' });
}

/** A provider or feature failure as the gateway's HTTP error; anything else unchanged. */
export function toHttpError(err: unknown): unknown {
  if (err instanceof ProviderError) return providerHttpError(err);
  if (err instanceof UnsupportedFeatureError) return new HttpError(400, err.message, { code: 'unsupported_feature', ...(err.param ? { param: err.param } : {}) });
  return err;
}
