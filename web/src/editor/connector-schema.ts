// Pure helpers of the connector block's form (docs/architecture.md, Connectors): an operation's parameter
// schema reshaped so numbers, objects and arrays also take a <reference> as text, in a reading order.
import type { JsonSchema } from './schema';

export const typesOf = (s: JsonSchema): string[] => (Array.isArray(s.type) ? s.type : s.type ? [s.type] : []);

/** One parameter's schema reshaped so its field also takes a reference. */
export function acceptingReferences(s: JsonSchema): JsonSchema {
  if (s.enum || s.const !== undefined || s.anyOf || s.oneOf) return s;
  const kinds = typesOf(s);
  if (kinds.includes('string')) return s;
  if (kinds.includes('number') || kinds.includes('integer')) return { anyOf: [{ type: 'string' }, { type: 'number' }], description: s.description };
  if (kinds.includes('boolean')) return s;
  // objects, arrays and schemas without a type: JSON, or text such as a reference
  return { anyOf: [{ ...s, description: undefined }, { type: 'string' }], description: s.description };
}

/**
 * The parameters' form schema in a reading order: path parameters as they appear in the path, then the
 * required ones, then the rest by name (the stored schema's key order is not the document's).
 */
export function parametersForm(schema: JsonSchema, path: string): JsonSchema {
  const inPath = [...path.matchAll(/\{([^}]+)\}/g)].map((m) => m[1]);
  const required = new Set(schema.required ?? []);
  const rank = (k: string) => (inPath.includes(k) ? inPath.indexOf(k) : required.has(k) ? 1000 : 2000);
  const keys = Object.keys(schema.properties ?? {}).sort((a, b) => rank(a) - rank(b) || a.localeCompare(b));
  const properties = Object.fromEntries(keys.map((k) => [k, acceptingReferences(schema.properties![k])]));
  return { type: 'object', properties, required: schema.required };
}
