// `selectedOutputs`: which block outputs an execute streams (and the values of its final answer), and
// the `blockOutputs` of a v2 run. A selector is `<blockName>.<path>` (the name normalized as in
// references), `<blockId>.<path>`, `<blockId>_<path>`, or a bare block id or name.
import { normalizeName, type BlockTrace, type WorkflowDefinition } from '../engine/index.js';

export interface OutputSelector {
  /** The selector as the caller wrote it. */
  key: string;
  blockId: string;
  /** Path inside the block's output; empty for the whole output. */
  path: string[];
}

interface BlockInfo { id: string; name: string }

/** Every block of a definition, container children included. */
function blocksOf(definition: WorkflowDefinition): BlockInfo[] {
  const out: BlockInfo[] = [];
  const stack: unknown[] = [definition.blocks];
  while (stack.length > 0) {
    const list = stack.pop();
    if (!Array.isArray(list)) continue;
    for (const b of list as { id: string; name: string; blocks?: unknown }[]) {
      out.push({ id: b.id, name: b.name });
      if (Array.isArray(b.blocks)) stack.push(b.blocks);
    }
  }
  return out;
}

/** Resolves selectors against a definition; selectors naming no block are dropped. */
export function resolveSelectors(definition: WorkflowDefinition, selected: readonly string[]): OutputSelector[] {
  const blocks = blocksOf(definition);
  const byId = new Map(blocks.map((b) => [b.id, b]));
  const byName = new Map(blocks.map((b) => [normalizeName(b.name), b]));
  const out: OutputSelector[] = [];
  for (const key of selected) {
    const dot = key.indexOf('.');
    const head = dot < 0 ? key : key.slice(0, dot);
    const rest = dot < 0 ? [] : key.slice(dot + 1).split('.').filter(Boolean);
    const block = byId.get(head) ?? byName.get(normalizeName(head));
    if (block) {
      out.push({ key, blockId: block.id, path: rest });
      continue;
    }
    // `<blockId>_<path>`: the longest block id the selector starts with.
    const prefixed = blocks.filter((b) => key.startsWith(`${b.id}_`)).sort((a, b) => b.id.length - a.id.length)[0];
    if (prefixed) out.push({ key, blockId: prefixed.id, path: key.slice(prefixed.id.length + 1).split('.').filter(Boolean) });
  }
  return out;
}

/** Selectors of a v2 run read (`blockId` or `blockId.path`; names are not resolved there). */
export function idSelectors(selected: readonly string[]): OutputSelector[] {
  return selected.map((key) => {
    const [blockId = '', ...path] = key.split('.');
    return { key, blockId, path: path.filter(Boolean) };
  });
}

/** The value at a path of a block output; `found: false` when the path leads nowhere. */
export function valueAt(output: unknown, path: readonly string[]): { found: boolean; value?: unknown } {
  let cur: unknown = output;
  for (const seg of path) {
    if (cur === null || typeof cur !== 'object' || !Object.prototype.hasOwnProperty.call(cur, seg)) return { found: false };
    cur = (cur as Record<string, unknown>)[seg];
  }
  return { found: true, value: cur };
}

/** `{blockId: {path: value}}` of the selected values found (`path` is the selector's path joined by dots, or the block id). */
export function selectedValues(selectors: readonly OutputSelector[], outputs: ReadonlyMap<string, unknown>, skip?: ReadonlySet<string>) {
  const out: Record<string, Record<string, unknown>> = {};
  for (const s of selectors) {
    if (skip?.has(s.key) || !outputs.has(s.blockId)) continue;
    const v = valueAt(outputs.get(s.blockId), s.path);
    if (!v.found) continue;
    (out[s.blockId] ??= {})[s.path.length > 0 ? s.path.join('.') : s.blockId] = v.value;
  }
  return out;
}

/** The last output of each block in a trace (the latest loop iteration or branch wins). */
export function traceOutputs(trace: readonly BlockTrace[] | null): Map<string, unknown> {
  const out = new Map<string, unknown>();
  for (const t of trace ?? []) if (t.output !== undefined) out.set(t.blockId, t.output);
  return out;
}
