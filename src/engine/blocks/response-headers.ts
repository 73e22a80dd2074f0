// Which headers a Response block may set. A workflow's answer is served on the service's own origin
// (the dashboard's), so it must never carry cookies, framing or hop-by-hop headers, redirects, CORS grants,
// proxy directives or the security headers the service sets itself. An allow-list, not a deny-list: a
// header nobody thought of stays out. docs/architecture.md ("Workflow-controlled answers") explains it.

/** Header names a Response block may set (lower case), besides custom `X-` headers. */
export const RESPONSE_HEADERS_ALLOWED: readonly string[] = [
  'content-type', 'content-language', 'content-disposition', 'cache-control', 'expires', 'etag',
  'last-modified', 'vary', 'retry-after', 'pragma',
];

/** `X-` names the service sets itself or that a reverse proxy acts on (internal redirects, file serving). */
const X_HEADERS_REFUSED = [
  /^x-content-type-options$/, /^x-frame-options$/, /^x-xss-protection$/, /^x-request-id$/, /^x-execution-id$/,
  /^x-run-id$/, /^x-ratelimit-/, /^x-credits-/, /^x-forwarded-/, /^x-real-ip$/, /^x-accel-/, /^x-sendfile/,
  /^x-lighttpd-/, /^x-permitted-cross-domain-policies$/, /^x-dns-prefetch-control$/, /^x-download-options$/,
  /^x-powered-by$/, /^x-http-method-override$/, /^x-original-/, /^x-rewrite-url$/,
];

/** An RFC 9110 token: what a header name may be. */
const HEADER_NAME = /^[A-Za-z0-9!#$%&'*+.^_`|~-]{1,100}$/;

/** Why a Response block may not set this header, or null when it may. */
export function responseHeaderRefusal(name: string): string | null {
  if (!HEADER_NAME.test(name)) return `"${name}" is not a valid header name`;
  const lower = name.toLowerCase();
  if (RESPONSE_HEADERS_ALLOWED.includes(lower)) return null;
  if (lower.startsWith('x-') && !X_HEADERS_REFUSED.some((re) => re.test(lower))) return null;
  return `header "${name}" cannot be set by a workflow (allowed: ${RESPONSE_HEADERS_ALLOWED.join(', ')} and custom X- headers)`;
}

/** CR, LF or NUL would split or end the header: refused. */
export const HEADER_VALUE_UNSAFE = /[\r\n\0]/;

/**
 * The headers of `headers` a workflow may set, the rest dropped (applied again where answers are sent, so an
 * answer stored before a rule changed obeys it too). `serviceHeaders` names those the service itself set.
 */
export function allowedResponseHeaders(headers: Record<string, string>, serviceHeaders: readonly string[] = []): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(headers)) {
    if (HEADER_VALUE_UNSAFE.test(v)) continue;
    if (responseHeaderRefusal(k) === null || serviceHeaders.includes(k.toLowerCase())) out[k] = v;
  }
  return out;
}
