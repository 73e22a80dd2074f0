// Response: builds the run's response ({data, status, headers}) and ends the run.
import { z } from 'zod';
import { defineBlockType } from '../block-type.js';
import { formatInterpolated } from '../references.js';

export const responseConfigSchema = z.strictObject({
  data: z.unknown().optional(),
  status: z.union([z.number().int().min(100).max(599), z.string().min(1)]).default(200),
  headers: z.record(z.string(), z.unknown()).default({}),
});

export type ResponseConfig = z.infer<typeof responseConfigSchema>;

export const responseBlock = defineBlockType<ResponseConfig>({
  type: 'response',
  config: responseConfigSchema,
  endsRun: true,
  retryable: false,
  async run(_ctx, config) {
    const status = typeof config.status === 'string' ? Number(config.status.trim()) : config.status;
    if (typeof status !== 'number' || !Number.isInteger(status) || status < 100 || status > 599) {
      throw new Error(`status must be an integer between 100 and 599; got ${formatInterpolated(config.status) || 'nothing'}`);
    }
    const headers: Record<string, string> = {};
    for (const [k, v] of Object.entries(config.headers ?? {})) {
      if (v !== undefined && v !== null) headers[k] = formatInterpolated(v);
    }
    return { output: { data: config.data === undefined ? null : config.data, status, headers } };
  },
});
