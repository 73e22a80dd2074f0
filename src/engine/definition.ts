// The workflow definition: its zod schema (structure only, published in OpenAPI) and the full
// validation run on save (per-type config, ids, names, edges, cycles, references).
import { z } from 'zod';
import type { AnyBlockType } from './block-type.js';
import { blockTypes } from './blocks/index.js';
import { collectTokens, normalizeName, RESERVED_HEADS, type HeadPredicate } from './references.js';
import type { BlockDefinition, DefinitionIssue, EdgeDefinition, WorkflowDefinition } from './types.js';

// ---------------------------------------------------------------------------------------------
// Schema (structure)
// ---------------------------------------------------------------------------------------------

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

// ---------------------------------------------------------------------------------------------
// Analysis (shared with compile)
// ---------------------------------------------------------------------------------------------

export interface AnalyzedBlock {
  def: BlockDefinition;
  type: AnyBlockType;
  /** Parsed config (defaults applied). */
  config: unknown;
  parentId: string | null;
  /** Containers enclosing the block, outermost first. */
  ancestors: string[];
  /** Position in definition order (depth-first, pre-order). */
  order: number;
  jsonPath: (string | number)[];
  normName: string;
}

export interface Analysis {
  definition: WorkflowDefinition;
  blocks: Map<string, AnalyzedBlock>;
  nameToId: Map<string, string>;
  startId: string;
  edges: EdgeDefinition[];
  isKnownHead: HeadPredicate;
}

export type ValidationResult =
  | { ok: true; definition: WorkflowDefinition }
  | { ok: false; errors: DefinitionIssue[] };

function label(def: { id?: unknown; name?: unknown }): string {
  const name = typeof def.name === 'string' ? def.name : String(def.id ?? '?');
  return `Block "${name}" (${String(def.id ?? '?')})`;
}

function formatPath(path: readonly PropertyKey[]): string {
  let out = '';
  for (const seg of path) {
    if (typeof seg === 'number') out += `[${seg}]`;
    else out += out ? `.${String(seg)}` : String(seg);
  }
  return out;
}

/** Maps a zod issue path inside the whole definition to the block it belongs to, if any. */
function blockAt(input: unknown, path: readonly PropertyKey[]): { block: Record<string, unknown>; rest: PropertyKey[] } | null {
  let cur: unknown = input;
  let found: { block: Record<string, unknown>; rest: PropertyKey[] } | null = null;
  for (let i = 0; i < path.length; i++) {
    if (cur === null || typeof cur !== 'object') break;
    cur = (cur as Record<PropertyKey, unknown>)[path[i] as never];
    if ((path[i - 1] === 'blocks') && typeof path[i] === 'number' && cur !== null && typeof cur === 'object') {
      found = { block: cur as Record<string, unknown>, rest: path.slice(i + 1) };
    }
  }
  return found;
}

export function analyzeDefinition(input: unknown): { issues: DefinitionIssue[]; analysis?: Analysis; definition?: WorkflowDefinition } {
  const issues: DefinitionIssue[] = [];
  const parsed = workflowDefinitionSchema.safeParse(input);
  if (!parsed.success) {
    for (const issue of parsed.error.issues) {
      const path = issue.path.map((p) => (typeof p === 'symbol' ? String(p) : p));
      const owner = blockAt(input, issue.path);
      if (owner) {
        const field = owner.rest.length ? formatPath(owner.rest) : undefined;
        issues.push({
          message: `${label(owner.block)}: ${field ? `${field}: ` : ''}${issue.message}`,
          blockId: typeof owner.block.id === 'string' ? owner.block.id : undefined,
          field,
          path,
        });
      } else {
        issues.push({ message: `${path.length ? `${formatPath(path)}: ` : ''}${issue.message}`, path });
      }
    }
    return { issues };
  }
  const definition = parsed.data as WorkflowDefinition;

  // Flatten blocks.
  const blocks = new Map<string, AnalyzedBlock>();
  const all: AnalyzedBlock[] = [];
  const walk = (list: BlockDefinition[], parentId: string | null, ancestors: string[], basePath: (string | number)[]) => {
    list.forEach((def, index) => {
      const jsonPath = [...basePath, 'blocks', index];
      const type = blockTypes.get(def.type);
      const lbl = label(def);
      if (!type) {
        issues.push({ message: `${lbl}: unknown block type "${def.type}"`, blockId: def.id, field: 'type', path: [...jsonPath, 'type'] });
      }
      let config: unknown = def.config;
      if (type) {
        const res = type.config.safeParse(def.config);
        if (res.success) config = res.data;
        else {
          for (const issue of res.error.issues) {
            const sub = issue.path.map((p) => (typeof p === 'symbol' ? String(p) : p));
            const field = formatPath(['config', ...sub]);
            issues.push({ message: `${lbl}: ${field}: ${issue.message}`, blockId: def.id, field, path: [...jsonPath, 'config', ...sub] });
          }
        }
        if (def.retry && type.retryable === false) {
          issues.push({ message: `${lbl}: retry is not supported for ${def.type} blocks`, blockId: def.id, field: 'retry', path: [...jsonPath, 'retry'] });
        }
      }
      const entry: AnalyzedBlock = {
        def,
        type: type ?? (undefined as unknown as AnyBlockType),
        config,
        parentId,
        ancestors,
        order: all.length,
        jsonPath,
        normName: normalizeName(def.name),
      };
      if (blocks.has(def.id)) {
        issues.push({ message: `${lbl}: duplicate block id "${def.id}"`, blockId: def.id, field: 'id', path: [...jsonPath, 'id'] });
      } else {
        blocks.set(def.id, entry);
      }
      all.push(entry);
      if (def.blocks && def.blocks.length > 0) {
        if (type && !type.container) {
          issues.push({ message: `${lbl}: only loop and parallel blocks can contain blocks`, blockId: def.id, field: 'blocks', path: [...jsonPath, 'blocks'] });
        }
        walk(def.blocks, def.id, [...ancestors, def.id], jsonPath);
      }
    });
  };
  walk(definition.blocks, null, [], []);

  // Names.
  const nameToId = new Map<string, string>();
  for (const b of all) {
    const lbl = label(b.def);
    const field = 'name';
    const path = [...b.jsonPath, 'name'];
    if (b.normName === '') {
      issues.push({ message: `${lbl}: name is empty after normalization`, blockId: b.def.id, field, path });
      continue;
    }
    const isEntry = b.type?.entry === true;
    if ((RESERVED_HEADS as readonly string[]).includes(b.normName) && !(b.normName === 'start' && isEntry)) {
      issues.push({ message: `${lbl}: name "${b.def.name}" is reserved`, blockId: b.def.id, field, path });
      continue;
    }
    const other = nameToId.get(b.normName);
    if (other !== undefined) {
      issues.push({
        message: `${lbl}: name "${b.def.name}" duplicates the name of block "${other}" (names are compared lower-case without spaces and dots)`,
        blockId: b.def.id, field, path,
      });
      continue;
    }
    nameToId.set(b.normName, b.def.id);
  }

  // Start block.
  const entries = all.filter((b) => b.type?.entry === true);
  const topEntries = entries.filter((b) => b.parentId === null);
  for (const b of entries) {
    if (b.parentId !== null) {
      issues.push({ message: `${label(b.def)}: a ${b.def.type} block must be at the top level`, blockId: b.def.id, field: 'type', path: [...b.jsonPath, 'type'] });
    }
  }
  if (topEntries.length === 0) {
    issues.push({ message: 'The workflow needs exactly one start block at the top level; found none', path: ['blocks'] });
  } else if (topEntries.length > 1) {
    for (const b of topEntries.slice(1)) {
      issues.push({ message: `${label(b.def)}: the workflow needs exactly one start block; found ${topEntries.length}`, blockId: b.def.id, field: 'type', path: [...b.jsonPath, 'type'] });
    }
  }
  const startId = topEntries[0]?.def.id ?? '';

  // Edges.
  const validEdges: EdgeDefinition[] = [];
  const seenEdges = new Set<string>();
  definition.edges.forEach((edge, index) => {
    const path = ['edges', index];
    const from = blocks.get(edge.from);
    const to = blocks.get(edge.to);
    let ok = true;
    if (!from) {
      issues.push({ message: `Edge ${index} (${edge.from} -> ${edge.to}): unknown source block "${edge.from}"`, field: 'from', path: [...path, 'from'] });
      ok = false;
    }
    if (!to) {
      issues.push({ message: `Edge ${index} (${edge.from} -> ${edge.to}): unknown target block "${edge.to}"`, field: 'to', path: [...path, 'to'] });
      ok = false;
    }
    if (!from || !to) return;
    const lbl = label(from.def);
    if (from.parentId !== to.parentId) {
      issues.push({
        message: `${lbl}: edge to block "${to.def.name}" (${to.def.id}) crosses a container boundary (edges only join blocks in the same container)`,
        blockId: from.def.id, field: 'edges', path,
      });
      ok = false;
    }
    if (edge.from === edge.to) {
      issues.push({ message: `${lbl}: edge from the block to itself forms a cycle`, blockId: from.def.id, field: 'edges', path });
      ok = false;
    }
    if (to.type?.entry) {
      issues.push({ message: `${label(to.def)}: a ${to.def.type} block cannot have incoming edges`, blockId: to.def.id, field: 'edges', path: [...path, 'to'] });
      ok = false;
    }
    if (edge.branch !== undefined && edge.on === 'error') {
      issues.push({ message: `${lbl}: an edge cannot have both a branch and on: "error"`, blockId: from.def.id, field: 'branch', path: [...path, 'branch'] });
      ok = false;
    } else if (edge.branch !== undefined && from.type) {
      const handles = from.type.handles ? from.type.handles(from.config as never) : [];
      if (!handles.includes(edge.branch)) {
        issues.push({
          message: `${lbl}: has no branch "${edge.branch}"${handles.length ? ` (branches: ${handles.join(', ')})` : ''}`,
          blockId: from.def.id, field: 'branch', path: [...path, 'branch'],
        });
        ok = false;
      }
    }
    const key = `${edge.from}\u0000${edge.to}\u0000${edge.branch ?? ''}\u0000${edge.on ?? ''}`;
    if (ok && !seenEdges.has(key)) {
      seenEdges.add(key);
      validEdges.push(edge);
    }
  });

  // Cycles (edges never cross containers, so one topological sort over everything suffices).
  {
    const indeg = new Map<string, number>();
    const out = new Map<string, string[]>();
    for (const id of blocks.keys()) { indeg.set(id, 0); out.set(id, []); }
    for (const e of validEdges) {
      indeg.set(e.to, (indeg.get(e.to) ?? 0) + 1);
      out.get(e.from)?.push(e.to);
    }
    const queue = [...indeg.entries()].filter(([, d]) => d === 0).map(([id]) => id);
    let seen = 0;
    while (queue.length) {
      const id = queue.pop() as string;
      seen++;
      for (const t of out.get(id) ?? []) {
        const d = (indeg.get(t) ?? 0) - 1;
        indeg.set(t, d);
        if (d === 0) queue.push(t);
      }
    }
    if (seen < blocks.size) {
      const inCycle = [...indeg.entries()].filter(([, d]) => d > 0).map(([id]) => blocks.get(id) as AnalyzedBlock);
      inCycle.sort((a, b) => a.order - b.order);
      const first = inCycle[0];
      issues.push({
        message: `${label(first.def)}: part of a cycle through blocks ${inCycle.map((b) => `"${b.def.name}"`).join(', ')} (loops are containers, not back edges)`,
        blockId: first.def.id, field: 'edges', path: ['edges'],
      });
    }
  }

  // References.
  const isKnownHead: HeadPredicate = (head) => nameToId.has(head) || (RESERVED_HEADS as readonly string[]).includes(head);
  for (const b of all) {
    if (!b.type) continue;
    const inner = new Set(b.type.innerFields ?? []);
    const config = (b.def.config ?? {}) as Record<string, unknown>;
    for (const [key, value] of Object.entries(config)) {
      const chain = inner.has(key) && b.type.container ? [...b.ancestors, b.def.id] : b.ancestors;
      for (const { path: sub, token } of collectTokens(value, isKnownHead, [key])) {
        if (token.kind !== 'ref') continue;
        const field = formatPath(['config', ...sub]);
        const report = (why: string) =>
          issues.push({ message: `${label(b.def)}: ${why} ${token.raw} in ${field}`, blockId: b.def.id, field, path: [...b.jsonPath, 'config', ...sub] });
        if (token.head === 'loop' || token.head === 'parallel') {
          const kind = token.head;
          if (!chain.some((id) => blocks.get(id)?.type?.container === kind)) report(`<${kind}.*> used outside a ${kind}:`);
          continue;
        }
        if (token.head === 'variable' || token.head === 'start') continue;
        const targetId = nameToId.get(token.head);
        if (targetId === undefined) { report('unknown reference'); continue; }
        const target = blocks.get(targetId) as AnalyzedBlock;
        if (target.parentId !== null && !chain.includes(target.parentId)) {
          const container = blocks.get(target.parentId);
          report(`reference to a block inside ${container ? `"${container.def.name}"` : 'a container'} is not visible here (use <${container?.normName ?? 'container'}.results> after it):`);
        }
      }
    }
  }

  if (issues.length > 0) return { issues, definition };
  return { issues, definition, analysis: { definition, blocks, nameToId, startId, edges: validEdges, isKnownHead } };
}

/** Validates a definition (as received on save). */
export function validateDefinition(input: unknown): ValidationResult {
  const { issues, definition } = analyzeDefinition(input);
  if (issues.length > 0 || !definition) return { ok: false, errors: issues };
  return { ok: true, definition };
}
