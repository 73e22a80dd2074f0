// Validation of a workflow definition, run when it is saved (and by compile): the block cap, the
// schema, then one named check per concern (blocks and their configs, names, the start block,
// edges, cycles, references, code syntax). Every issue names its block and field.
import type { AnyBlockType } from './block-type.js';
import { blockTypes } from './blocks/index.js';
import { bindCode, sourcePosition } from './code.js';
import { countBlocks, formatPath, jsonPath, label, schemaIssues, workflowDefinitionSchema } from './definition-schema.js';
import { getOrThrow } from './lookup.js';
import { collectTokens, ENTRY_HEADS, normalizeName, RESERVED_HEADS, type HeadPredicate, type RefToken } from './references.js';
import { unknownSecretIssues } from './secret-refs.js';
import type { BlockDefinition, DefinitionIssue, EdgeDefinition, WorkflowDefinition } from './types.js';

export { blockDefinitionSchema, edgeDefinitionSchema, retryPolicySchema, workflowDefinitionSchema } from './definition-schema.js';

// ---------------------------------------------------------------------------------------------
// Options and results
// ---------------------------------------------------------------------------------------------

/** A syntax error in a piece of code; line and column are 1-based. */
export interface CodeSyntaxError {
  message: string;
  line: number;
  column: number;
}

/** Checks JavaScript (an async function body); undefined when it parses. */
export type CodeChecker = (source: string) => CodeSyntaxError | undefined;

export interface ValidateOptions {
  /** Blocks per definition, nested ones included (default 1,000). */
  maxBlocks?: number;
  /** Syntax checker for code fields (function blocks); without it code is not checked. */
  checkCode?: CodeChecker;
  /** The host's checks of block configs the engine cannot check itself (cron expressions); on save only. */
  checkConfig?: ConfigChecker;
  /** The workspace's secret names: a `{{NAME}}` not among them is reported; on save only. */
  knownSecrets?: ReadonlySet<string>;
}

/** Problems of one block's parsed config: `field` is the config key (e.g. "cron"). */
export type ConfigChecker = (blockType: string, config: unknown) => { field: string; message: string }[];

/**
 * `maxReferencesPerBlock`: each reference costs a few microseconds to resolve inside one synchronous step the
 * engine's pacing cannot split; 1,000 keep a block's step to a few milliseconds. `maxReportedIssues`: a 400
 * lists at most this many problems (a definition of 100,000 bad references once made a 30 MB answer).
 */
export const DEFINITION_DEFAULTS = { maxBlocks: 1000, maxReferencesPerBlock: 1000, maxReportedIssues: 100 } as const;

export type ValidationResult =
  | { ok: true; definition: WorkflowDefinition }
  | { ok: false; errors: DefinitionIssue[] };

// ---------------------------------------------------------------------------------------------
// Analysis (shared with compile)
// ---------------------------------------------------------------------------------------------

export interface AnalyzedBlock {
  def: BlockDefinition;
  /** Undefined when the type is unknown (reported). */
  type: AnyBlockType | undefined;
  /** Parsed config (defaults applied); the raw config when it did not parse. */
  config: unknown;
  configOk: boolean;
  parentId: string | null;
  /** Containers enclosing the block, outermost first. */
  ancestors: string[];
  /** Position in definition order (depth-first, pre-order). */
  order: number;
  jsonPath: (string | number)[];
  normName: string;
}

/** A valid definition's analysis: every block has a known type. */
export interface Analysis {
  definition: WorkflowDefinition;
  blocks: Map<string, AnalyzedBlock & { type: AnyBlockType }>;
  nameToId: Map<string, string>;
  /** The default entry: the start block, else the only other entry block (a webhook). */
  startId: string;
  /** Entry blocks by type name (at most one per type). */
  entryIds: Map<string, string>;
  edges: EdgeDefinition[];
  isKnownHead: HeadPredicate;
}

interface Collected {
  /** By id (the first block of a duplicated id). */
  byId: Map<string, AnalyzedBlock>;
  /** Every block in definition order. */
  all: AnalyzedBlock[];
}

type Issues = DefinitionIssue[];

function blockIssue(b: AnalyzedBlock, message: string, field: string, path: (string | number)[]): DefinitionIssue {
  return { message: `${label(b.def)}: ${message}`, blockId: b.def.id, field, path };
}

// ---------------------------------------------------------------------------------------------
// Checks
// ---------------------------------------------------------------------------------------------

/** Blocks with their types and parsed configs; unknown types, bad configs, misplaced children. */
function collectBlocks(definition: WorkflowDefinition, issues: Issues): Collected {
  const byId = new Map<string, AnalyzedBlock>();
  const all: AnalyzedBlock[] = [];
  const walk = (list: BlockDefinition[], parentId: string | null, ancestors: string[], basePath: (string | number)[]) => {
    list.forEach((def, index) => {
      const b: AnalyzedBlock = {
        def,
        type: blockTypes.get(def.type),
        config: def.config,
        configOk: false,
        parentId,
        ancestors,
        order: all.length,
        jsonPath: [...basePath, 'blocks', index],
        normName: normalizeName(def.name),
      };
      checkBlockConfig(b, issues);
      if (byId.has(def.id)) issues.push(blockIssue(b, `duplicate block id "${def.id}"`, 'id', [...b.jsonPath, 'id']));
      else byId.set(def.id, b);
      all.push(b);
      if (def.blocks && def.blocks.length > 0) {
        if (b.type && !b.type.container) {
          issues.push(blockIssue(b, 'only loop and parallel blocks can contain blocks', 'blocks', [...b.jsonPath, 'blocks']));
        }
        walk(def.blocks, def.id, [...ancestors, def.id], b.jsonPath);
      }
    });
  };
  walk(definition.blocks, null, [], []);
  return { byId, all };
}

/** The block's type exists, its config parses, retry is allowed. Sets `config`/`configOk`. */
function checkBlockConfig(b: AnalyzedBlock, issues: Issues): void {
  const { def, type } = b;
  if (!type) {
    issues.push(blockIssue(b, `unknown block type "${def.type}"`, 'type', [...b.jsonPath, 'type']));
    return;
  }
  const res = type.config.safeParse(def.config);
  if (res.success) {
    b.config = res.data;
    b.configOk = true;
  } else {
    for (const issue of res.error.issues) {
      const sub = jsonPath(issue.path);
      const field = formatPath(['config', ...sub]);
      issues.push(blockIssue(b, `${field}: ${issue.message}`, field, [...b.jsonPath, 'config', ...sub]));
    }
  }
  if (def.retry && type.retryable === false) {
    issues.push(blockIssue(b, `retry is not supported for ${def.type} blocks`, 'retry', [...b.jsonPath, 'retry']));
  }
}

/** Names are non-empty, not reserved and unique after normalization. Returns name -> id. */
function checkNames(all: AnalyzedBlock[], issues: Issues): Map<string, string> {
  const nameToId = new Map<string, string>();
  for (const b of all) {
    const path = [...b.jsonPath, 'name'];
    if (b.normName === '') {
      issues.push(blockIssue(b, 'name is empty after normalization', 'name', path));
      continue;
    }
    const isEntry = b.type?.entry === true;
    if ((RESERVED_HEADS as readonly string[]).includes(b.normName) && !(isEntry && b.normName === b.def.type)) {
      issues.push(blockIssue(b, `name "${b.def.name}" is reserved`, 'name', path));
      continue;
    }
    const other = nameToId.get(b.normName);
    if (other !== undefined) {
      issues.push(blockIssue(b, `name "${b.def.name}" duplicates the name of block "${other}" (names are compared lower-case without spaces and dots)`, 'name', path));
      continue;
    }
    nameToId.set(b.normName, b.def.id);
  }
  return nameToId;
}

/**
 * Entry blocks: at least one at the top level, at most one per entry type (a workflow may have a start
 * block, a webhook block, or both). Returns them by type name ('' start id when there is none).
 */
function checkStart(all: AnalyzedBlock[], issues: Issues): { startId: string; entryIds: Map<string, string> } {
  const entries = all.filter((b) => b.type?.entry === true);
  const topEntries = entries.filter((b) => b.parentId === null);
  for (const b of entries) {
    if (b.parentId !== null) issues.push(blockIssue(b, `a ${b.def.type} block must be at the top level`, 'type', [...b.jsonPath, 'type']));
  }
  if (topEntries.length === 0) {
    issues.push({ message: 'The workflow needs exactly one start block at the top level; found none', path: ['blocks'] });
  }
  const entryIds = new Map<string, string>();
  for (const b of topEntries) {
    if (entryIds.has(b.def.type)) {
      const n = topEntries.filter((x) => x.def.type === b.def.type).length;
      issues.push(blockIssue(b, `the workflow needs exactly one ${b.def.type} block; found ${n}`, 'type', [...b.jsonPath, 'type']));
      continue;
    }
    entryIds.set(b.def.type, b.def.id);
  }
  const startId = entryIds.get('start') ?? topEntries[0]?.def.id ?? '';
  return { startId, entryIds };
}

/** Checks one edge; true when it is usable. */
function checkEdge(edge: EdgeDefinition, index: number, byId: Map<string, AnalyzedBlock>, issues: Issues): boolean {
  const path: (string | number)[] = ['edges', index];
  const from = byId.get(edge.from);
  const to = byId.get(edge.to);
  const name = `Edge ${index} (${edge.from} -> ${edge.to})`;
  if (!from) issues.push({ message: `${name}: unknown source block "${edge.from}"`, field: 'from', path: [...path, 'from'] });
  if (!to) issues.push({ message: `${name}: unknown target block "${edge.to}"`, field: 'to', path: [...path, 'to'] });
  if (!from || !to) return false;
  let ok = true;
  const report = (issue: DefinitionIssue) => {
    issues.push(issue);
    ok = false;
  };
  if (from.parentId !== to.parentId) {
    report(blockIssue(from, `edge to block "${to.def.name}" (${to.def.id}) crosses a container boundary (edges only join blocks in the same container)`, 'edges', path));
  }
  if (edge.from === edge.to) report(blockIssue(from, 'edge from the block to itself forms a cycle', 'edges', path));
  if (to.type?.entry) report(blockIssue(to, `a ${to.def.type} block cannot have incoming edges`, 'edges', [...path, 'to']));
  if (edge.branch !== undefined && edge.on === 'error') {
    report(blockIssue(from, 'an edge cannot have both a branch and on: "error"', 'branch', [...path, 'branch']));
  } else if (edge.branch !== undefined && from.type) {
    const handles = from.type.handles && from.configOk ? from.type.handles(from.config as never) : [];
    if (!handles.includes(edge.branch)) {
      report(blockIssue(from, `has no branch "${edge.branch}"${handles.length ? ` (branches: ${handles.join(', ')})` : ''}`, 'branch', [...path, 'branch']));
    }
  }
  return ok;
}

/** Usable edges, duplicates dropped. */
function checkEdges(edges: EdgeDefinition[], byId: Map<string, AnalyzedBlock>, issues: Issues): EdgeDefinition[] {
  const valid: EdgeDefinition[] = [];
  const seen = new Set<string>();
  edges.forEach((edge, index) => {
    if (!checkEdge(edge, index, byId, issues)) return;
    const key = `${edge.from}\u0000${edge.to}\u0000${edge.branch ?? ''}\u0000${edge.on ?? ''}`;
    if (seen.has(key)) return;
    seen.add(key);
    valid.push(edge);
  });
  return valid;
}

/** No cycles (edges never cross containers, so one topological sort over everything suffices). */
function checkCycles(byId: Map<string, AnalyzedBlock>, edges: EdgeDefinition[], issues: Issues): void {
  const indeg = new Map<string, number>();
  const out = new Map<string, string[]>();
  for (const id of byId.keys()) {
    indeg.set(id, 0);
    out.set(id, []);
  }
  for (const e of edges) {
    indeg.set(e.to, (indeg.get(e.to) ?? 0) + 1);
    out.get(e.from)?.push(e.to);
  }
  const queue = [...indeg.entries()].filter(([, d]) => d === 0).map(([id]) => id);
  let seen = 0;
  for (let id = queue.pop(); id !== undefined; id = queue.pop()) {
    seen++;
    for (const t of out.get(id) ?? []) {
      const d = (indeg.get(t) ?? 0) - 1;
      indeg.set(t, d);
      if (d === 0) queue.push(t);
    }
  }
  if (seen >= byId.size) return;
  const inCycle = [...indeg.entries()].filter(([, d]) => d > 0).map(([id]) => getOrThrow(byId, id, 'block'));
  inCycle.sort((a, b) => a.order - b.order);
  const first = inCycle[0];
  issues.push(blockIssue(first, `part of a cycle through blocks ${inCycle.map((b) => `"${b.def.name}"`).join(', ')} (loops are containers, not back edges)`, 'edges', ['edges']));
}

/** Why a reference from `b` (config key `key`) cannot resolve; null when it is fine. */
function referenceProblem(b: AnalyzedBlock, key: string, token: RefToken, ctx: RefContext): string | null {
  const type = b.type;
  const chain = type?.container && (type.innerFields ?? []).includes(key) ? [...b.ancestors, b.def.id] : b.ancestors;
  if (token.head === 'loop' || token.head === 'parallel') {
    const kind = token.head;
    return chain.some((id) => ctx.byId.get(id)?.type?.container === kind) ? null : `<${kind}.*> used outside a ${kind}:`;
  }
  if (token.head === 'variable') return null;
  const isEntryHead = ENTRY_HEADS.includes(token.head);
  const targetId = isEntryHead ? ctx.entryIds.get(token.head) : ctx.nameToId.get(token.head);
  if (targetId === undefined || targetId === '') return isEntryHead ? null : 'unknown reference';
  const target = getOrThrow(ctx.byId, targetId, 'block');
  if (target.parentId !== null && !chain.includes(target.parentId)) {
    const container = ctx.byId.get(target.parentId);
    return `reference to a block inside ${container ? `"${container.def.name}"` : 'a container'} is not visible here (use <${container?.normName ?? 'container'}.results> after it):`;
  }
  const field = token.path[0];
  if (ctx.checkFields && typeof field === 'string' && target.configOk && target.type?.outputFields) {
    const fields = target.type.outputFields(target.config as never);
    if (fields !== null && !fields.includes(field)) {
      return `unknown field "${field}" of block "${target.def.name}" (its fields: ${fields.join(', ')}):`;
    }
  }
  return null;
}

interface RefContext {
  byId: Map<string, AnalyzedBlock>;
  nameToId: Map<string, string>;
  entryIds: Map<string, string>;
  isKnownHead: HeadPredicate;
  /** Report references to fields a block's output cannot have, and blocks with too many references (save only). */
  checkFields: boolean;
}

/** Every reference names a known, visible block (and a declared field where fields are fixed). */
function checkReferences(all: AnalyzedBlock[], ctx: RefContext, issues: Issues): void {
  for (const b of all) {
    if (!b.type) continue;
    const tokens = collectTokens(b.def.config ?? {}, ctx.isKnownHead);
    const max = DEFINITION_DEFAULTS.maxReferencesPerBlock;
    if (ctx.checkFields && tokens.length > max) {
      issues.push(blockIssue(b, `the config holds ${tokens.length} references; at most ${max} are allowed per block`, 'config', [...b.jsonPath, 'config']));
      continue;
    }
    for (const { path: sub, token } of tokens) {
      if (token.kind !== 'ref') continue;
      const why = referenceProblem(b, String(sub[0]), token, ctx);
      if (why === null) continue;
      const field = formatPath(['config', ...sub]);
      issues.push(blockIssue(b, `${why} ${token.raw} in ${field}`, field, [...b.jsonPath, 'config', ...sub]));
    }
  }
}

/** Code fields parse, checked as the sandbox will run them (references bound), positions in the user's code. */
function checkCodeSyntax(all: AnalyzedBlock[], isKnownHead: HeadPredicate, checkCode: CodeChecker, issues: Issues): void {
  for (const b of all) {
    if (!b.type?.codeFields || !b.configOk) continue;
    const config = b.def.config ?? {};
    for (const key of b.type.codeFields) {
      const source = config[key];
      if (typeof source !== 'string') continue;
      // Secrets are bound as variables when the run has them; assume it will.
      const bound = bindCode(source, isKnownHead, () => true);
      const err = checkCode(bound.code);
      if (err === undefined) continue;
      const at = sourcePosition(source, bound, err.line, err.column);
      const field = `config.${key}`;
      issues.push(blockIssue(b, `syntax error at line ${at.line}, column ${at.column}: ${err.message}`, field, [...b.jsonPath, 'config', key]));
    }
  }
}

/** The host's checks of parsed configs (e.g. a schedule's cron expression, parsed outside the engine). */
function checkHostConfigs(all: AnalyzedBlock[], checkConfig: ConfigChecker, issues: Issues): void {
  for (const b of all) {
    if (!b.configOk) continue;
    for (const p of checkConfig(b.def.type, b.config)) {
      issues.push(blockIssue(b, `config.${p.field}: ${p.message}`, `config.${p.field}`, [...b.jsonPath, 'config', p.field]));
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Entry points
// ---------------------------------------------------------------------------------------------

function hasTypes(blocks: Map<string, AnalyzedBlock>): blocks is Map<string, AnalyzedBlock & { type: AnyBlockType }> {
  for (const b of blocks.values()) if (!b.type) return false;
  return true;
}

/**
 * `save` runs every check; `compile` (a stored definition about to run) leaves out the checks
 * added after definitions were first stored (block cap, output fields, code syntax), so a saved
 * workflow keeps running.
 */
export function analyzeDefinition(
  input: unknown,
  opts: ValidateOptions = {},
  mode: 'save' | 'compile' = 'save',
): { issues: DefinitionIssue[]; analysis?: Analysis; definition?: WorkflowDefinition } {
  const save = mode === 'save';
  const maxBlocks = opts.maxBlocks ?? DEFINITION_DEFAULTS.maxBlocks;
  const count = save ? countBlocks(input) : 0;
  if (count > maxBlocks) {
    return { issues: [{ message: `The definition has ${count} blocks; at most ${maxBlocks} are allowed (maxBlocks)`, field: 'blocks', path: ['blocks'] }] };
  }

  const parsed = workflowDefinitionSchema.safeParse(input);
  if (!parsed.success) return { issues: schemaIssues(input, parsed.error) };
  const definition: WorkflowDefinition = parsed.data;

  const issues: Issues = [];
  const { byId, all } = collectBlocks(definition, issues);
  const nameToId = checkNames(all, issues);
  const { startId, entryIds } = checkStart(all, issues);
  const edges = checkEdges(definition.edges, byId, issues);
  checkCycles(byId, edges, issues);
  const isKnownHead: HeadPredicate = (head) => nameToId.has(head) || (RESERVED_HEADS as readonly string[]).includes(head);
  checkReferences(all, { byId, nameToId, entryIds, isKnownHead, checkFields: save }, issues);
  if (save && opts.checkCode) checkCodeSyntax(all, isKnownHead, opts.checkCode, issues);
  if (save && opts.checkConfig) checkHostConfigs(all, opts.checkConfig, issues);
  if (save && opts.knownSecrets) issues.push(...unknownSecretIssues(definition, opts.knownSecrets));

  if (issues.length > 0 || !hasTypes(byId)) return { issues, definition };
  return { issues, definition, analysis: { definition, blocks: byId, nameToId, startId, entryIds, edges, isKnownHead } };
}

/** Validates a definition (as received on save). */
export function validateDefinition(input: unknown, opts?: ValidateOptions): ValidationResult {
  const { issues, definition } = analyzeDefinition(input, opts);
  const max = DEFINITION_DEFAULTS.maxReportedIssues;
  if (issues.length > max) {
    return { ok: false, errors: [...issues.slice(0, max - 1), { message: `and ${issues.length - max + 1} more problems`, path: [] }] };
  }
  if (issues.length > 0 || !definition) return { ok: false, errors: issues };
  return { ok: true, definition };
}
