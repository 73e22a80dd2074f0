import { ProviderError } from './providers/types.js';

// Some providers echo what they were sent when they refuse it: the `Authorization` header, the
// `x-api-key` / `x-goog-api-key` value, a `key=` query. Their error text then holds the operator's
// provider key, and from there it would reach a tenant's answer, a stored run, the request ledger and
// the server's log. Every provider error passes through one scrubber (providers/index.ts wraps each
// provider with it) before anything else reads it.

const REDACTED = '[redacted]';

/** A fragment of a configured key this long or longer is treated as the key (upstreams truncate keys). */
const MIN_FRAGMENT = 8;

/** Upstream error text longer than this is cut before it is scrubbed (nobody reads more; it bounds the scan). */
const MAX_TEXT = 4000;

/** Secret-shaped text whatever key it belongs to: bearer tokens, OpenAI / Anthropic / Google keys, key headers and query parameters. */
const SECRET_SHAPES: [RegExp, string][] = [
  [/\bBearer\s+[A-Za-z0-9._~+/=-]{8,}/gi, `Bearer ${REDACTED}`],
  [/\bsk-ant-[A-Za-z0-9_-]+/g, REDACTED],
  [/\bsk-[A-Za-z0-9_-]{8,}/g, REDACTED],
  [/\bAIza[0-9A-Za-z_-]{20,}/g, REDACTED],
  [/([?&](?:key|api_key|apikey|access_token)=)[^&\s"'#]+/gi, `$1${REDACTED}`],
  [/((?:x-goog-api-key|x-api-key|api-key|authorization)["']?\s*[:=]\s*["']?)(?!Bearer\s)(?!\[redacted\])(?:(?:Basic|Digest)\s+)?[^\s"',;}]+/gi, `$1${REDACTED}`],
];

/** Removes the configured provider keys, and anything shaped like a secret, from upstream text. */
export class SecretScrubber {
  /** Every MIN_FRAGMENT-long piece of every key of at least that length. */
  private readonly fragments = new Set<string>();
  /** Keys too short to scan for in pieces: removed where they appear whole. */
  private readonly shortKeys: string[] = [];

  constructor(keys: readonly (string | undefined)[]) {
    for (const raw of keys) {
      const key = raw?.trim();
      if (!key) continue;
      if (key.length < MIN_FRAGMENT) {
        // A one- or two-character "key" would blank out ordinary words; such a key protects nothing anyway.
        if (key.length >= 4) this.shortKeys.push(key);
        continue;
      }
      for (let i = 0; i + MIN_FRAGMENT <= key.length; i++) this.fragments.add(key.slice(i, i + MIN_FRAGMENT));
    }
  }

  text(input: string): string {
    let out = input.length > MAX_TEXT ? `${input.slice(0, MAX_TEXT)}...` : input;
    if (this.fragments.size > 0) out = this.maskFragments(out);
    for (const key of this.shortKeys) out = out.split(key).join(REDACTED);
    for (const [shape, replacement] of SECRET_SHAPES) out = out.replace(shape, replacement);
    return out;
  }

  /** The same failure with its text scrubbed: a new ProviderError (its stack built from the clean message), other errors cleaned in place. */
  error(err: unknown): unknown {
    if (err instanceof ProviderError) {
      // Upstreams send null for fields they leave out, whatever the types say.
      const clean = (s: string | undefined) => (typeof s === 'string' ? this.text(s) : s);
      return new ProviderError(err.provider, err.status, this.text(err.message), clean(err.upstreamType), clean(err.upstreamCode));
    }
    if (err instanceof Error) {
      if (typeof err.message === 'string') err.message = this.text(err.message);
      if (typeof err.stack === 'string') err.stack = this.text(err.stack);
    }
    return err;
  }

  /** Replaces each run of text made of key fragments (overlapping pieces of one key) with one marker. */
  private maskFragments(text: string): string {
    let out = '';
    let copied = 0;
    let spanStart = -1;
    let spanEnd = -1;
    for (let i = 0; i + MIN_FRAGMENT <= text.length; i++) {
      if (!this.fragments.has(text.slice(i, i + MIN_FRAGMENT))) continue;
      if (spanStart >= 0 && i <= spanEnd) {
        spanEnd = i + MIN_FRAGMENT;
        continue;
      }
      if (spanStart >= 0) {
        out += text.slice(copied, spanStart) + REDACTED;
        copied = spanEnd;
      }
      spanStart = i;
      spanEnd = i + MIN_FRAGMENT;
    }
    if (spanStart < 0) return text;
    return out + text.slice(copied, spanStart) + REDACTED + text.slice(spanEnd);
  }
}
