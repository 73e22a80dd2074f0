// The workflow definition's zod schema (structure only; published in OpenAPI) and how its issues
// become DefinitionIssues naming the block and field. Per-type checks live in definition.ts.
import { z } from 'zod';
import type { DefinitionIssue } from './types.js';

export const retryPolicySchema = z.object({
  maxAttempts: z.number().int().min(1).max(5),
  backoffMs: z.number().int().min(0).max(10_000).default(1000),
});

export const blockDefinitionSchema = z.looseObject({
  id: z.string().min(1).max(200),
  type: z.string().min(1).max(100),
  name: z.string().min(1).max(200),
  config: z.record(z.string(), z.unknown()).default({}),
  retry: retryPolicySchema.optional(),
  get blocks(): z.ZodOptional<z.ZodArray<typeof blockDefinitionSchema>> {
    return z.array(blockDefinitionSchema).optional();
  },
});

export const edgeDefinitionSchema = z.looseObject({
  from: z.string().min(1),
  to: z.string().min(1),
  branch: z.string().min(1).optional(),
  on: z.literal('error').optional(),
});

export const workflowDefinitionSchema = z.looseObject({
  name: z.string().max(200).optional(),
  description: z.string().optional(),
  variables: z.record(z.string(), z.unknown()).default({}),
  blocks: z.array(blockDefinitionSchema).min(1),
  edges: z.array(edgeDefinitionSchema).default([]),
});

/** `Block "Name" (id)`: how every issue about a block starts. */
export function label(def: { id?: unknown; name?: unknown }): string {
  const name = typeof def.name === 'string' ? def.name : String(def.id ?? '?');
  return `Block "${name}" (${String(def.id ?? '?')})`;
}

export function formatPath(path: readonly PropertyKey[]): string {
  let out = '';
  for (const seg of path) {
    if (typeof seg === 'number') out += `[${seg}]`;
    else out += out ? `.${String(seg)}` : String(seg);
  }
  return out;
}

export function jsonPath(path: readonly PropertyKey[]): (string | number)[] {
  return path.map((p) => (typeof p === 'symbol' ? String(p) : p));
}

function isObject(v: unknown): v is Record<PropertyKey, unknown> {
  return v !== null && typeof v === 'object';
}

/** Maps a zod issue path inside the whole definition to the block it belongs to, if any. */
function blockAt(input: unknown, path: readonly PropertyKey[]): { block: Record<PropertyKey, unknown>; rest: PropertyKey[] } | null {
  let cur: unknown = input;
  let found: { block: Record<PropertyKey, unknown>; rest: PropertyKey[] } | null = null;
  for (let i = 0; i < path.length; i++) {
    if (!isObject(cur)) break;
    cur = cur[path[i]];
    if (path[i - 1] === 'blocks' && typeof path[i] === 'number' && isObject(cur)) {
      found = { block: cur, rest: path.slice(i + 1) };
    }
  }
  return found;
}

/** The schema's issues, each naming its block and field when it is inside a block. */
export function schemaIssues(input: unknown, error: z.ZodError): DefinitionIssue[] {
  return error.issues.map((issue) => {
    const path = jsonPath(issue.path);
    const owner = blockAt(input, issue.path);
    if (!owner) return { message: `${path.length ? `${formatPath(path)}: ` : ''}${issue.message}`, path };
    const field = owner.rest.length ? formatPath(owner.rest) : undefined;
    return {
      message: `${label(owner.block)}: ${field ? `${field}: ` : ''}${issue.message}`,
      blockId: typeof owner.block.id === 'string' ? owner.block.id : undefined,
      field,
      path,
    };
  });
}

/**
 * Blocks in a raw (unvalidated) definition, nested ones included: only array lengths are read, so
 * it is cheap enough to run before anything else looks at the blocks.
 */
export function countBlocks(input: unknown): number {
  let count = 0;
  const seen = new WeakSet<unknown[]>();
  const stack: unknown[] = [isObject(input) ? input.blocks : undefined];
  while (stack.length > 0) {
    const list = stack.pop();
    if (!Array.isArray(list) || seen.has(list)) continue;
    seen.add(list);
    count += list.length;
    for (const b of list) if (isObject(b) && Array.isArray(b.blocks)) stack.push(b.blocks);
  }
  return count;
}
