// Start: the entry block. Declared input fields are coerced to their types; the output holds them
// at the top level plus `input` (the raw caller input). Without declared fields the raw input is
// passed through.
import { z } from 'zod';
import { defineBlockType } from '../block-type.js';

export const inputFieldTypes = ['string', 'number', 'boolean', 'object', 'array', 'files'] as const;
export type InputFieldType = (typeof inputFieldTypes)[number];

export const inputFieldSchema = z.object({
  name: z.string().min(1).max(200),
  type: z.enum(inputFieldTypes).default('string'),
  required: z.boolean().optional(),
  default: z.unknown().optional(),
  description: z.string().optional(),
});

/** The declared input fields of a definition's start block; undefined when it has none (raw input passes through). */
export function declaredFields(definition: { blocks: readonly { type: string; config: unknown }[] }): z.infer<typeof inputFieldSchema>[] | undefined {
  const start = definition.blocks.find((b) => b.type === 'start');
  const parsed = z.array(inputFieldSchema).safeParse((start?.config as { inputFormat?: unknown } | undefined)?.inputFormat);
  return parsed.success && parsed.data.length > 0 ? parsed.data : undefined;
}

export const startConfigSchema = z
  .strictObject({ inputFormat: z.array(inputFieldSchema).default([]) })
  .superRefine((cfg, ctx) => {
    const seen = new Set<string>();
    cfg.inputFormat.forEach((f, i) => {
      if (f.name === 'input') {
        ctx.addIssue({ code: 'custom', path: ['inputFormat', i, 'name'], message: 'the field name "input" is reserved (the output carries the raw input under it)' });
      }
      if (seen.has(f.name)) ctx.addIssue({ code: 'custom', path: ['inputFormat', i, 'name'], message: `duplicate input field "${f.name}"` });
      seen.add(f.name);
    });
  });

export type StartConfig = z.infer<typeof startConfigSchema>;

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

function parseJson(v: string): unknown {
  try {
    return JSON.parse(v);
  } catch {
    return undefined;
  }
}

/** Coerces a value to a declared input type; throws with a message naming the field. */
export function coerceInput(name: string, type: InputFieldType, value: unknown): unknown {
  const fail = (): never => {
    const shown = typeof value === 'string' ? JSON.stringify(value.length > 60 ? `${value.slice(0, 60)}…` : value) : Array.isArray(value) ? 'an array' : typeof value;
    throw new Error(`Input field "${name}" must be of type ${type}; got ${shown}`);
  };
  switch (type) {
    case 'string':
      if (typeof value === 'string') return value;
      if (typeof value === 'number' || typeof value === 'boolean') return String(value);
      return fail();
    case 'number': {
      if (typeof value === 'number' && Number.isFinite(value)) return value;
      if (typeof value === 'string' && value.trim() !== '') {
        const n = Number(value.trim());
        if (Number.isFinite(n)) return n;
      }
      return fail();
    }
    case 'boolean':
      if (typeof value === 'boolean') return value;
      if (typeof value === 'string') {
        const s = value.trim().toLowerCase();
        if (s === 'true' || s === '1') return true;
        if (s === 'false' || s === '0') return false;
      }
      if (value === 1) return true;
      if (value === 0) return false;
      return fail();
    case 'object': {
      const v = typeof value === 'string' ? parseJson(value) : value;
      if (isPlainObject(v)) return v;
      return fail();
    }
    case 'array': {
      const v = typeof value === 'string' ? parseJson(value) : value;
      if (Array.isArray(v)) return v;
      return fail();
    }
    case 'files': {
      const v = typeof value === 'string' ? parseJson(value) : value;
      if (Array.isArray(v) && v.every(isPlainObject)) return v;
      if (isPlainObject(v)) return [v];
      return fail();
    }
  }
}

/**
 * Fills `output` with the declared fields: each from `raw.input[field]`, else `raw[field]`, else its
 * default; a missing required field throws; values are coerced to the field's type. (Start and webhook.)
 */
export function resolveInputFields(
  raw: Record<string, unknown>,
  fields: readonly z.infer<typeof inputFieldSchema>[],
  output: Record<string, unknown>,
): Record<string, unknown> {
  const has = (o: Record<string, unknown>, k: string) => Object.prototype.hasOwnProperty.call(o, k);
  const nested = isPlainObject(raw.input) ? raw.input : undefined;
  for (const f of fields) {
    let value: unknown = nested && has(nested, f.name) ? nested[f.name] : undefined;
    if (value === undefined || value === null) value = has(raw, f.name) ? raw[f.name] : undefined;
    if (value === undefined || value === null) {
      if (f.default !== undefined) value = f.default;
      else if (f.required) throw new Error(`Missing required input field "${f.name}"`);
      else {
        output[f.name] = null;
        continue;
      }
    }
    output[f.name] = coerceInput(f.name, f.type, value);
  }
  return output;
}

export const startBlock = defineBlockType<StartConfig>({
  type: 'start',
  config: startConfigSchema,
  entry: true,
  retryable: false,
  pure: true,
  // Declared fields plus the raw input; without declared fields the raw input is the output.
  outputFields: (config) => (config.inputFormat.length > 0 ? [...config.inputFormat.map((f) => f.name), 'input'] : null),
  async run(ctx, config) {
    const raw = ctx.input;
    const fields = Array.isArray(config.inputFormat) ? config.inputFormat : [];
    if (fields.length === 0) return { output: raw };
    const output = resolveInputFields(raw, fields, {});
    output.input = raw;
    return { output };
  },
});
