// HTTP: an outbound request through the HTTP port (SSRF-guarded by the adapter).
// Output {status, headers, data}; data is parsed JSON for JSON responses, else text.
// A status >= 400 is a block error (so error edges can handle it).
import { z } from 'zod';
import { defineBlockType } from '../block-type.js';
import { formatInterpolated } from '../references.js';

export const httpConfigSchema = z.strictObject({
  url: z.string().min(1),
  method: z.string().regex(/^[A-Za-z]+$/, 'method must be an HTTP method name').default('GET'),
  headers: z.record(z.string(), z.unknown()).optional(),
  query: z.record(z.string(), z.unknown()).optional(),
  body: z.unknown().optional(),
  timeoutMs: z.number().int().min(1).max(300_000).default(30_000),
});

export type HttpConfig = z.infer<typeof httpConfigSchema>;

function isJsonContentType(ct: string | undefined): boolean {
  return !!ct && /[/+]json\b/i.test(ct);
}

export const httpBlock = defineBlockType<HttpConfig>({
  type: 'http',
  config: httpConfigSchema,
  async run(ctx, config) {
    if (typeof config.url !== 'string' || config.url.trim() === '') throw new Error(`url must be a non-empty string; got ${formatInterpolated(config.url) || 'nothing'}`);
    let url: URL;
    try {
      url = new URL(config.url.trim());
    } catch {
      throw new Error(`invalid URL "${config.url}"`);
    }
    for (const [k, v] of Object.entries(config.query ?? {})) {
      if (v === undefined || v === null) continue;
      if (Array.isArray(v)) for (const item of v) url.searchParams.append(k, formatInterpolated(item));
      else url.searchParams.append(k, formatInterpolated(v));
    }
    const method = String(config.method ?? 'GET').toUpperCase();
    const headers: Record<string, string> = {};
    for (const [k, v] of Object.entries(config.headers ?? {})) {
      if (v === undefined || v === null) continue;
      headers[k] = formatInterpolated(v);
    }
    const hasHeader = (name: string) => Object.keys(headers).some((k) => k.toLowerCase() === name);
    let body: string | undefined;
    if (config.body !== undefined && config.body !== null && method !== 'GET' && method !== 'HEAD') {
      if (typeof config.body === 'string') body = config.body;
      else {
        body = JSON.stringify(config.body);
        if (!hasHeader('content-type')) headers['content-type'] = 'application/json';
      }
    }
    const timeoutMs = Math.max(1, Math.min(config.timeoutMs, ctx.remainingMs()));
    // The body becomes this block's output: the port refuses one over the block output cap before it is
    // parsed here, on the event loop (docs/architecture.md, "Where limits are enforced").
    const res = await ctx.ports.http.request({ url: url.toString(), method, headers, body, timeoutMs, signal: ctx.signal, blockOutput: true });
    if (res.status >= 400) {
      const preview = res.body.length > 300 ? `${res.body.slice(0, 300)}…` : res.body;
      throw new Error(`HTTP ${res.status} from ${method} ${url.origin}${url.pathname}${preview ? `: ${preview}` : ''}`);
    }
    let data: unknown = res.body;
    if (isJsonContentType(res.headers['content-type']) && res.body.trim() !== '') {
      try {
        data = JSON.parse(res.body);
      } catch {
        data = res.body;
      }
    }
    return { output: { status: res.status, headers: res.headers, data } };
  },
});
