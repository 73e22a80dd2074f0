// Response: builds the run's response ({data, status, headers}) and ends the run. Status 200 to 599 (a 1xx is
// not a final answer); headers from the allow-list in response-headers.ts.
import { z } from 'zod';
import { defineBlockType } from '../block-type.js';
import { formatInterpolated } from '../references.js';
import { HEADER_VALUE_UNSAFE, responseHeaderRefusal } from './response-headers.js';

export const responseConfigSchema = z.strictObject({
  data: z.unknown().optional(),
  status: z.union([z.number().int().min(200).max(599), z.string().min(1)]).default(200),
  headers: z.record(z.string(), z.unknown()).default({}).superRefine((headers, ctx) => {
    for (const [name, value] of Object.entries(headers)) {
      const refusal = responseHeaderRefusal(name);
      if (refusal) ctx.addIssue({ code: 'custom', path: [name], message: refusal });
      else if (typeof value === 'string' && HEADER_VALUE_UNSAFE.test(value)) {
        ctx.addIssue({ code: 'custom', path: [name], message: `header "${name}" holds a line break or NUL` });
      }
    }
  }),
});

export type ResponseConfig = z.infer<typeof responseConfigSchema>;

export const responseBlock = defineBlockType<ResponseConfig>({
  type: 'response',
  config: responseConfigSchema,
  endsRun: true,
  retryable: false,
  pure: true,
  async run(_ctx, config) {
    const status = typeof config.status === 'string' ? Number(config.status.trim()) : config.status;
    if (typeof status !== 'number' || !Number.isInteger(status) || status < 200 || status > 599) {
      throw new Error(`status must be an integer between 200 and 599; got ${formatInterpolated(config.status) || 'nothing'}`);
    }
    const headers: Record<string, string> = {};
    for (const [k, v] of Object.entries(config.headers ?? {})) {
      if (v === undefined || v === null) continue;
      const value = formatInterpolated(v);
      // A reference may resolve to a line break: the answer would be split, so the run fails instead.
      if (HEADER_VALUE_UNSAFE.test(value)) throw new Error(`header "${k}" holds a line break or NUL after its references were resolved`);
      headers[k] = value;
    }
    return { output: { data: config.data === undefined ? null : config.data, status, headers } };
  },
});
