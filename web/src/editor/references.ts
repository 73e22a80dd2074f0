// Reference suggestions for a block's config fields: `<start.field>`, the outputs of upstream blocks,
// `<loop.*>` / `<parallel.*>` inside containers, `<container.results>`, and `<variable.name>`.
import type { BlockDef, Definition } from '../api/workflows';
import { containersOf, indexBlocks, isContainer, normalizeName, upstreamOf } from './graph';

export interface RefSuggestion { ref: string; detail: string }

/** Output fields each block type is known to produce (the engine's block files decide them). */
const OUTPUT_FIELDS: Record<string, string[]> = {
  http: ['status', 'headers', 'data'],
  condition: ['selectedOption', 'conditionResult'],
  router: ['selectedRoute', 'reasoning', 'model', 'tokens', 'cost'],
  agent: ['content', 'model', 'tokens', 'cost', 'toolCalls', 'finishReason'],
  evaluator: ['model', 'tokens', 'cost'],
  knowledge: ['results', 'totalResults', 'query'],
  wait: ['waitedMs'],
  response: ['data', 'status', 'headers'],
};

const TABLE_FIELDS: Record<string, string[]> = {
  query: ['rows', 'rowCount', 'totalCount', 'limit', 'offset'],
  get: ['row'], insert: ['rows', 'insertedCount'], upsert: ['row', 'operation'],
  update: ['updatedCount', 'updatedRowIds'], delete: ['deletedCount', 'deletedRowIds'],
};

/** Top-level keys of the object literal a function returns (`return { a: 1, b }`), best effort. */
export function returnedKeys(code: string): string[] {
  const keys = new Set<string>();
  const re = /return\s*\{/g;
  let m: RegExpExecArray | null;
  while ((m = re.exec(code)) !== null) {
    let depth = 1;
    let segment = '';
    const flush = () => {
      const k = /^\s*["']?([A-Za-z_$][\w$]*)["']?\s*(?::|$)/.exec(segment);
      if (k) keys.add(k[1]);
      segment = '';
    };
    for (let i = m.index + m[0].length; i < code.length; i++) {
      const ch = code[i];
      if ('{[('.includes(ch)) depth++;
      else if ('}])'.includes(ch)) {
        depth--;
        if (depth === 0) break;
      } else if (ch === ',' && depth === 1) {
        flush();
        continue;
      }
      if (depth === 1) segment += ch;
    }
    flush();
  }
  return [...keys];
}

function fieldsOf(b: BlockDef): string[] {
  const c = b.config ?? {};
  switch (b.type) {
    case 'function': return typeof c.code === 'string' ? returnedKeys(c.code) : [];
    case 'variables': return c.assignments && typeof c.assignments === 'object' ? Object.keys(c.assignments as object) : [];
    case 'human': return Array.isArray(c.fields) ? (c.fields as { name?: unknown }[]).map((f) => String(f?.name ?? '')).filter(Boolean) : [];
    case 'table': return TABLE_FIELDS[String(c.operation ?? 'query')] ?? [];
    case 'evaluator': return [...(Array.isArray(c.metrics) ? (c.metrics as { name?: unknown }[]).map((x) => String(x?.name ?? '')).filter(Boolean) : []), ...OUTPUT_FIELDS.evaluator];
    default: return OUTPUT_FIELDS[b.type] ?? [];
  }
}

function inputFields(b: BlockDef): { name: string; type: string }[] {
  const f = b.config?.inputFormat;
  return Array.isArray(f) ? (f as { name?: unknown; type?: unknown }[]).filter((x) => typeof x?.name === 'string' && x.name).map((x) => ({ name: String(x.name), type: String(x.type ?? 'string') })) : [];
}

/** Every reference that makes sense in the config of block `blockId`. */
export function suggestionsFor(def: Definition, blockId: string): RefSuggestion[] {
  const index = indexBlocks(def.blocks);
  const out: RefSuggestion[] = [];
  const seen = new Set<string>();
  const add = (ref: string, detail: string) => { if (!seen.has(ref)) { seen.add(ref); out.push({ ref, detail }); } };

  // entry blocks are reachable by their type from anywhere
  for (const { block } of index.values()) {
    if (block.type === 'start') {
      for (const f of inputFields(block)) add(`<start.${f.name}>`, `Start input (${f.type})`);
      add('<start.input>', 'The whole input of the run');
    }
    if (block.type === 'webhook') for (const f of inputFields(block)) add(`<webhook.${f.name}>`, `Webhook field (${f.type})`);
    if (block.type === 'schedule') add('<schedule.scheduledAt>', 'Schedule tick time');
  }
  for (const c of containersOf(blockId, index)) {
    const head = c.type === 'loop' ? 'loop' : 'parallel';
    add(`<${head}.index>`, `${c.name}: index of this ${head === 'loop' ? 'iteration' : 'branch'}`);
    add(`<${head}.currentItem>`, `${c.name}: current item`);
    add(`<${head}.items>`, `${c.name}: all items`);
  }
  for (const id of upstreamOf(def, blockId, index)) {
    const b = index.get(id)?.block;
    if (!b || b.type === 'start' || b.type === 'webhook' || b.type === 'schedule') continue;
    const head = normalizeName(b.name);
    if (isContainer(b)) { add(`<${head}.results>`, `${b.name}: results of every ${b.type === 'loop' ? 'iteration' : 'branch'}`); continue; }
    const fields = fieldsOf(b);
    add(`<${head}>`, `${b.name}: whole output`);
    for (const f of fields) add(`<${head}.${f}>`, `${b.name} output`);
  }
  for (const name of Object.keys(def.variables ?? {})) add(`<variable.${name}>`, 'Workflow variable');
  return out;
}

/** `{{NAME}}` for each secret of the workspace (the names only; values never reach the dashboard). */
export function secretSuggestions(names: readonly string[]): RefSuggestion[] {
  return names.map((name) => ({ ref: `{{${name}}}`, detail: 'Workspace secret' }));
}

/**
 * The reference being typed at `caret`: the text from the last `<` (or `{{`, a secret) up to the caret,
 * when it has no space or `>` (so `a < b` is not taken for one).
 */
export function partialAt(text: string, caret: number): { start: number; typed: string } | null {
  const before = text.slice(0, caret);
  const braces = before.lastIndexOf('{{');
  if (braces >= 0 && braces > before.lastIndexOf('<') && /^\{\{[A-Za-z0-9_]*$/.test(before.slice(braces))) {
    return { start: braces, typed: before.slice(braces) };
  }
  const lt = before.lastIndexOf('<');
  if (lt < 0) return null;
  const typed = before.slice(lt);
  if (!/^<[\p{L}\p{N}_.\-[\]]*$/u.test(typed)) return null;
  return { start: lt, typed };
}
