// Webhook: an entry block like start, entered when a delivery to the workflow's trigger URL starts the
// run (the webhooks area verifies, deduplicates and admits the request; this block only shapes it).
// The run input is the request body's fields plus `headers` and `query` (unless the body defines them).
// Declared input fields are coerced like the start block's; `headers`, `query`, `event`, `id`, `data`
// and the raw `input` stay readable. Without declared fields the input is the output.
import { z } from 'zod';
import { defineBlockType } from '../block-type.js';
import { inputFieldSchema, resolveInputFields } from './start.js';

export const webhookProviders = ['generic', 'github', 'stripe', 'slack', 'microsoft', 'meta'] as const;
export const webhookResponseModes = ['ack', 'custom', 'result'] as const;
/** A path segment: letters, digits, `.`, `_`, `~`, `-` (1 to 128). */
export const WEBHOOK_PATH = /^[A-Za-z0-9][A-Za-z0-9._~-]{0,127}$/;
const HEADER_NAME = /^[A-Za-z0-9!#$%&'*+.^_`|~-]{1,100}$/;
/** Entries an `allowedIps` list may hold. */
export const MAX_ALLOWED_IPS = 1000;

/** An address or CIDR range (`203.0.113.7`, `10.0.0.0/8`, `2001:db8::/32`) of an `allowedIps` list. */
const ipOrRange = z.union([z.ipv4(), z.ipv6(), z.cidrv4(), z.cidrv6()]);

/** Fields passed through beside the declared ones. */
const PASSED = ['headers', 'query', 'event', 'id', 'data'] as const;

export const webhookConfigSchema = z
  .strictObject({
    path: z.string().regex(WEBHOOK_PATH, 'a path is 1-128 letters, digits, ".", "_", "~" or "-", starting with a letter or digit').optional(),
    inputFormat: z.array(inputFieldSchema).default([]),
    requireAuth: z.boolean().default(false),
    token: z.string().min(1).max(1000).optional(),
    tokenHeader: z.string().regex(HEADER_NAME, 'not a valid header name').optional(),
    responseMode: z.enum(webhookResponseModes).default('ack'),
    responseStatus: z.number().int().min(100).max(599).optional(),
    responseBody: z.unknown().optional(),
    idempotencyField: z.string().min(1).max(200).optional(),
    provider: z.enum(webhookProviders).default('generic'),
    secret: z.string().min(1).max(1000).optional(),
    /** Addresses and CIDR ranges a delivery may come from (empty or absent: any). */
    allowedIps: z.array(z.string().max(100)).max(MAX_ALLOWED_IPS).optional(),
  })
  .superRefine((cfg, ctx) => {
    if (cfg.requireAuth && !cfg.token) ctx.addIssue({ code: 'custom', path: ['token'], message: 'requireAuth needs a token' });
    if ((cfg.provider === 'github' || cfg.provider === 'stripe' || cfg.provider === 'slack') && !cfg.secret) {
      ctx.addIssue({ code: 'custom', path: ['secret'], message: `the ${cfg.provider} provider verifies signatures: set its signing secret` });
    }
    cfg.allowedIps?.forEach((entry, i) => {
      if (!ipOrRange.safeParse(entry).success) {
        ctx.addIssue({ code: 'custom', path: ['allowedIps', i], message: `"${entry}" is not an IPv4 or IPv6 address or CIDR range (e.g. 203.0.113.7, 10.0.0.0/8, 2001:db8::/32)` });
      }
    });
    const seen = new Set<string>();
    cfg.inputFormat.forEach((f, i) => {
      // event, id and data may be declared (typed); the others are the request's own.
      if (f.name === 'input' || f.name === 'headers' || f.name === 'query') {
        ctx.addIssue({ code: 'custom', path: ['inputFormat', i, 'name'], message: `the field name "${f.name}" is reserved` });
      }
      if (seen.has(f.name)) ctx.addIssue({ code: 'custom', path: ['inputFormat', i, 'name'], message: `duplicate input field "${f.name}"` });
      seen.add(f.name);
    });
  });

export type WebhookConfig = z.infer<typeof webhookConfigSchema>;

const has = (o: Record<string, unknown>, k: string) => Object.prototype.hasOwnProperty.call(o, k);

export const webhookBlock = defineBlockType<WebhookConfig>({
  type: 'webhook',
  config: webhookConfigSchema,
  entry: true,
  retryable: false,
  pure: true,
  // The trigger's settings are read by the webhooks area; references in them are not resolved.
  // `{{NAME}}` references in `token` and `secret` are resolved by the webhooks area as each delivery is verified.
  rawFields: ['token', 'secret', 'responseBody', 'path', 'tokenHeader', 'idempotencyField', 'allowedIps'],
  maskedFields: ['token', 'secret'],
  outputFields: (config) => (config.inputFormat.length > 0 ? [...new Set([...config.inputFormat.map((f) => f.name), ...PASSED, 'input'])] : null),
  async run(ctx, config) {
    const raw = ctx.input;
    const fields = Array.isArray(config.inputFormat) ? config.inputFormat : [];
    if (fields.length === 0) return { output: raw };
    const output: Record<string, unknown> = {};
    for (const k of PASSED) if (has(raw, k)) output[k] = raw[k];
    resolveInputFields(raw, fields, output);
    output.input = raw;
    return { output };
  },
});
