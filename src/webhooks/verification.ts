// Provider presets: token authentication, signatures over the raw body, verification challenges and the
// delivery key. Pure functions over the request; comparisons of secrets in constant time.
import { createHash, createHmac } from 'node:crypto';
import { constantTimeEqual } from '../constant-time.js';
import type { WebhookConfig } from '../engine/index.js';
import { parseTemplate, scanTokens } from '../engine/references.js';

export type Headers = Record<string, string | string[] | undefined>;

/** Seconds a signed timestamp (Stripe, Slack) may be away from now. */
export const SIGNATURE_TOLERANCE_S = 300;

export const header = (h: Headers, name: string): string | undefined => {
  const v = h[name.toLowerCase()];
  return Array.isArray(v) ? v[0] : v;
};

const hmacHex = (secret: string, data: Buffer | string) => createHmac('sha256', secret).update(data).digest('hex');

/**
 * The configured token: in the configured `tokenHeader` when there is one (that header only, as the reference
 * reads it), else as `Authorization: Bearer <token>` (the scheme in any case).
 */
export function tokenAccepted(cfg: WebhookConfig, h: Headers): boolean {
  if (!cfg.requireAuth) return true;
  const token = cfg.token ?? '';
  if (cfg.tokenHeader) {
    const given = header(h, cfg.tokenHeader);
    return given !== undefined && constantTimeEqual(given, token);
  }
  const auth = header(h, 'authorization');
  const m = auth ? /^bearer\s+(.+)$/i.exec(auth.trim()) : null;
  return m !== null && constantTimeEqual(m[1], token);
}

/** The settings whose `{{NAME}}` references name workspace secrets, resolved as each delivery is verified. */
export const CREDENTIAL_FIELDS = ['token', 'secret'] as const;
export type CredentialField = (typeof CREDENTIAL_FIELDS)[number];

const noHeads = () => false;

/** The secret names a credential setting references (none: it is used as written). */
export function credentialSecrets(cfg: WebhookConfig, field: CredentialField): string[] {
  const value = cfg[field];
  if (!value) return [];
  const names = scanTokens(value, noHeads).map(({ token }) => (token.kind === 'secret' ? token.name : null));
  return [...new Set(names.filter((n): n is string => n !== null))];
}

/**
 * A credential setting with its `{{NAME}}` references replaced by the secrets' values (`values` holds every
 * name it references). Anything else in it, `<block.field>` included, stays as written.
 */
export function withSecrets(value: string, values: Readonly<Record<string, string>>): string {
  const parts = parseTemplate(value, noHeads);
  if (!parts) return value;
  return parts.map((p) => (typeof p === 'string' ? p : p.kind === 'secret' ? values[p.name] : p.raw)).join('');
}

/** Why the provider's signature is refused (null: accepted or none defined). */
export function signatureProblem(cfg: WebhookConfig, h: Headers, raw: Buffer, nowMs: number): string | null {
  const secret = cfg.secret;
  if (!secret) return null;
  switch (cfg.provider) {
    case 'github':
    case 'meta': {
      const sig = header(h, 'x-hub-signature-256');
      if (!sig) return 'Missing X-Hub-Signature-256';
      return constantTimeEqual(sig, `sha256=${hmacHex(secret, raw)}`) ? null : 'Invalid signature';
    }
    case 'stripe': {
      const sig = header(h, 'stripe-signature');
      if (!sig) return 'Missing Stripe-Signature';
      const parts = sig.split(',').map((p) => p.trim().split('='));
      const t = parts.find(([k]) => k === 't')?.[1];
      const v1 = parts.filter(([k]) => k === 'v1').map(([, v]) => v ?? '');
      if (!t || !/^\d+$/.test(t) || v1.length === 0) return 'Malformed Stripe-Signature';
      if (Math.abs(nowMs / 1000 - Number(t)) > SIGNATURE_TOLERANCE_S) return 'Signature timestamp outside the tolerance';
      const expected = hmacHex(secret, Buffer.concat([Buffer.from(`${t}.`), raw]));
      return v1.some((v) => constantTimeEqual(v, expected)) ? null : 'Invalid signature';
    }
    case 'slack': {
      const sig = header(h, 'x-slack-signature');
      const ts = header(h, 'x-slack-request-timestamp');
      if (!sig || !ts) return 'Missing X-Slack-Signature or X-Slack-Request-Timestamp';
      if (!/^\d+$/.test(ts) || Math.abs(nowMs / 1000 - Number(ts)) > SIGNATURE_TOLERANCE_S) return 'Signature timestamp outside the tolerance';
      const expected = `v0=${hmacHex(secret, Buffer.concat([Buffer.from(`v0:${ts}:`), raw]))}`;
      return constantTimeEqual(sig, expected) ? null : 'Invalid signature';
    }
    default:
      return null;
  }
}

/** Microsoft Graph notifications carry the subscription's clientState; with a secret it must match. */
export function clientStateProblem(cfg: WebhookConfig, body: unknown): string | null {
  if (cfg.provider !== 'microsoft' || !cfg.secret) return null;
  const items = (body as { value?: unknown } | null)?.value;
  if (!Array.isArray(items) || items.length === 0) return 'Missing notifications';
  const ok = items.every((n) => typeof (n as { clientState?: unknown })?.clientState === 'string' && constantTimeEqual((n as { clientState: string }).clientState, cfg.secret ?? ''));
  return ok ? null : 'Invalid clientState';
}

export interface ChallengeAnswer {
  status: number;
  text?: string;
  json?: unknown;
}

/**
 * A provider verification handshake answered without a run: Slack `url_verification` (POST body),
 * Microsoft Graph `validationToken` (query), Meta `hub.mode=subscribe` with `hub.challenge` (GET).
 */
export function challenge(cfg: WebhookConfig, method: string, query: Record<string, string>, body: unknown): ChallengeAnswer | null {
  if (cfg.provider === 'slack' && method === 'POST') {
    const b = body as { type?: unknown; challenge?: unknown } | null;
    if (b && b.type === 'url_verification' && typeof b.challenge === 'string') return { status: 200, json: { challenge: b.challenge } };
  }
  if (cfg.provider === 'microsoft' && typeof query.validationToken === 'string') {
    return { status: 200, text: query.validationToken };
  }
  if (cfg.provider === 'meta' && method === 'GET' && query['hub.mode'] === 'subscribe' && typeof query['hub.challenge'] === 'string') {
    const given = query['hub.verify_token'] ?? '';
    if (cfg.token && !constantTimeEqual(given, cfg.token)) return { status: 403, json: { error: 'Verify token mismatch' } };
    return { status: 200, text: query['hub.challenge'] };
  }
  return null;
}

/** Provider delivery headers, in the order the reference reads them. */
export const DELIVERY_HEADERS = [
  'x-github-delivery', 'webhook-id', 'x-webhook-id', 'x-shopify-webhook-id', 'x-gitlab-event-uuid', 'x-event-id',
  'x-teams-notification-id', 'svix-id', 'linear-delivery', 'greenhouse-event-id', 'x-zm-request-id',
  'x-atlassian-webhook-identifier', 'idempotency-key',
] as const;

function atPath(value: unknown, path: string): unknown {
  let v = value;
  for (const part of path.split('.')) {
    if (v === null || typeof v !== 'object') return undefined;
    v = (v as Record<string, unknown>)[part];
  }
  return v;
}

/** Providers whose signature (checked when a secret is set) covers the body and nothing else a key could use. */
const BODY_SIGNED = new Set(['github', 'meta', 'stripe', 'slack']);

/**
 * The delivery key. The configured `idempotencyField`, when the body holds a scalar there (not ''), comes first (the
 * reference injects it as its first-read delivery header). Otherwise, with a provider signature, only signed
 * material counts: Stripe's event `id`, Slack's `event_id`, else a hash of the body. Headers such as
 * `X-GitHub-Delivery` or `Idempotency-Key` and the query string are not signed, so a captured delivery
 * replayed with new ones must land on the same key (no new run). Without a signature: the provider's
 * delivery id (header; Stripe's and Slack's event id in the body), else a hash of method, path, query and body.
 */
export function deliveryKey(cfg: WebhookConfig, req: { method: string; path: string; rawQuery: string; headers: Headers; raw: Buffer; body: unknown }): string {
  const bounded = (kind: string, v: string) => `${kind}:${v.length <= 200 ? v : createHash('sha256').update(v).digest('hex')}`;
  const b = req.body !== null && typeof req.body === 'object' ? (req.body as Record<string, unknown>) : undefined;
  if (cfg.idempotencyField) {
    const v = atPath(req.body, cfg.idempotencyField);
    // An empty string is no value: it would make every such delivery one.
    if ((typeof v === 'string' && v !== '') || typeof v === 'number' || typeof v === 'boolean') return bounded('f', String(v));
  }
  if (cfg.secret && BODY_SIGNED.has(cfg.provider)) {
    if (cfg.provider === 'stripe' && typeof b?.id === 'string' && b.id !== '') return bounded('stripe', b.id);
    if (cfg.provider === 'slack' && typeof b?.event_id === 'string' && b.event_id !== '') return bounded('slack', b.event_id);
    return `signed-body:${createHash('sha256').update(req.raw).digest('hex')}`;
  }
  for (const name of DELIVERY_HEADERS) {
    const v = header(req.headers, name);
    if (v) return bounded(`h:${name}`, v);
  }
  if (b) {
    if ((cfg.provider === 'stripe' || b.object === 'event') && typeof b.id === 'string' && b.id.startsWith('evt_')) return bounded('stripe', b.id);
    if (cfg.provider === 'slack' && typeof b.event_id === 'string') return bounded('slack', b.event_id);
  }
  const hash = createHash('sha256').update(req.method).update('\0').update(req.path).update('\0').update(req.rawQuery).update('\0').update(req.raw).digest('hex');
  return `hash:${hash}`;
}

const WITHHELD = new Set([
  'authorization', 'proxy-authorization', 'cookie', 'x-api-key', 'x-hub-signature', 'x-hub-signature-256', 'stripe-signature',
  'x-slack-signature',
]);

/** Request headers a workflow may read: credential headers withheld (and any carrying the token). */
export function visibleHeaders(cfg: WebhookConfig, h: Headers): Record<string, string> {
  const out: Record<string, string> = {};
  const custom = cfg.tokenHeader?.toLowerCase();
  for (const [k, v] of Object.entries(h)) {
    if (v === undefined) continue;
    const name = k.toLowerCase();
    if (WITHHELD.has(name) || name === custom) continue;
    const value = Array.isArray(v) ? v.join(', ') : v;
    if (cfg.token && value.includes(cfg.token)) continue;
    if (cfg.secret && value.includes(cfg.secret)) continue;
    out[name] = value;
  }
  return out;
}
