// A tool's input: the JSON Schema published for it (from the start block's input format) and the check
// of call arguments against that schema, so that input that does not match answers a tool error
// instead of starting a run.
import { z } from 'zod';
import { inputFieldSchema, resolveInputFields, type InputFieldType } from '../engine/blocks/start.js';

type InputField = z.infer<typeof inputFieldSchema>;

export interface ToolInputSchema {
  [key: string]: unknown;
  type: 'object';
  properties?: Record<string, object>;
  required?: string[];
  additionalProperties?: boolean;
}

const fieldSchema = (type: InputFieldType): Record<string, unknown> => {
  switch (type) {
    case 'files':
      return { type: 'array', items: { type: 'object' }, description: 'Files: objects such as {name, url} or {name, data, mimeType}' };
    default:
      return { type };
  }
};

/**
 * The JSON Schema of a tool's arguments: one property per declared field (its type, description and
 * default), `required` listing the required fields without a default, and no other properties. A
 * workflow whose start block declares nothing takes any object.
 */
export function inputSchema(fields: readonly InputField[] | undefined): ToolInputSchema {
  if (!fields) return { type: 'object', additionalProperties: true };
  const properties: Record<string, object> = {};
  const required: string[] = [];
  for (const f of fields) {
    const base = fieldSchema(f.type);
    const description = [f.description, base.description].filter(Boolean).join(' — ');
    properties[f.name] = { ...base, ...(description ? { description } : {}), ...(f.default !== undefined ? { default: f.default } : {}) };
    if (f.required && f.default === undefined) required.push(f.name);
  }
  return { type: 'object', properties, ...(required.length > 0 ? { required } : {}), additionalProperties: false };
}

const isPlainObject = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v);

function matches(type: InputFieldType, v: unknown): boolean {
  switch (type) {
    case 'string': return typeof v === 'string';
    case 'number': return typeof v === 'number' && Number.isFinite(v);
    case 'boolean': return typeof v === 'boolean';
    case 'object': return isPlainObject(v);
    case 'array': return Array.isArray(v);
    case 'files': return Array.isArray(v) && v.every(isPlainObject);
  }
}

const typeName = (v: unknown) => (v === null ? 'null' : Array.isArray(v) ? 'array' : typeof v);

/**
 * Checks call arguments against the tool's schema: the run's input on success, else every problem,
 * one line each. The start block then sees exactly what the schema promised.
 */
export function checkArguments(fields: readonly InputField[] | undefined, args: unknown):
  { ok: true; input: Record<string, unknown> } | { ok: false; problems: string[] } {
  const given = args === undefined || args === null ? {} : args;
  if (!isPlainObject(given)) return { ok: false, problems: [`arguments must be an object; got ${typeName(given)}`] };
  if (!fields) return { ok: true, input: { ...given } };
  const problems: string[] = [];
  const known = new Map(fields.map((f) => [f.name, f]));
  for (const key of Object.keys(given)) {
    if (!known.has(key)) problems.push(`"${key}" is not an input of this tool (inputs: ${fields.map((f) => f.name).join(', ')})`);
  }
  for (const f of fields) {
    const v = given[f.name];
    if (v === undefined) {
      if (f.required && f.default === undefined) problems.push(`"${f.name}" is required`);
    } else if (!matches(f.type, v)) {
      problems.push(`"${f.name}" must be ${f.type === 'files' ? 'an array of objects' : `of type ${f.type}`}; got ${typeName(v)}`);
    }
  }
  if (problems.length > 0) return { ok: false, problems };
  // The start block's own resolution (defaults, coercion) must accept it too; it cannot fail on valid input.
  try {
    resolveInputFields(given, fields, {});
  } catch (err) {
    return { ok: false, problems: [(err as Error).message] };
  }
  return { ok: true, input: { ...given } };
}
