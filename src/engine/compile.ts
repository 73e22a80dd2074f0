// Definition -> graph, once per deployed version (the result is immutable and shareable between
// concurrent runs; only a small code-binding cache inside grows).
import type { AnyBlockType } from './block-type.js';
import { bindCode, type BoundCode } from './code.js';
import { analyzeDefinition } from './definition.js';
import { getOrThrow } from './lookup.js';
import { collectTokens, compileValue, type HeadPredicate, type ValueResolver } from './references.js';
import type { BlockDefinition, DefinitionIssue, RetryPolicy, WorkflowDefinition } from './types.js';

export class DefinitionError extends Error {
  constructor(readonly issues: DefinitionIssue[]) {
    super(
      issues.length === 0
        ? 'Invalid workflow definition'
        : `Invalid workflow definition: ${issues[0].message}${issues.length > 1 ? ` (and ${issues.length - 1} more)` : ''}`,
    );
    this.name = 'DefinitionError';
  }
}

export type EdgeKind = 'default' | 'branch' | 'error';

export interface CompiledEdge {
  from: string;
  to: string;
  kind: EdgeKind;
  branch?: string;
}

export interface CompiledScope {
  /** Container block id; null for the top level. */
  containerId: string | null;
  kind: 'loop' | 'parallel' | null;
  /** Blocks of this scope that can run, in definition order. */
  nodes: string[];
  /** Nodes with no incoming edge inside the scope (top level: the start block). */
  entries: string[];
}

export interface CompiledBlock {
  id: string;
  name: string;
  typeName: string;
  type: AnyBlockType;
  def: BlockDefinition;
  /** Parsed config (defaults applied). */
  config: Record<string, unknown>;
  /** Resolves the non-raw config fields; null when they hold no reference. */
  resolver: ValueResolver | null;
  rawConfig: Record<string, unknown>;
  /** Secrets referenced anywhere in the config (masked in the trace). */
  secretNames: string[];
  parentId: string | null;
  order: number;
  incoming: CompiledEdge[];
  outgoing: CompiledEdge[];
  hasErrorEdge: boolean;
  /** Some enclosing container has an error edge (an unhandled failure may be caught there). */
  errorContained: boolean;
  retry?: RetryPolicy;
  /** Children graph, for containers. */
  scope?: CompiledScope;
}

export interface CompiledGraph {
  readonly definition: WorkflowDefinition;
  readonly blocks: ReadonlyMap<string, CompiledBlock>;
  readonly root: CompiledScope;
  /** The block the run enters at (the start block unless compiled for another entry). */
  readonly startId: string;
  /** Entry blocks by type name: `<start.x>` and `<webhook.x>` read these. */
  readonly entryIds: ReadonlyMap<string, string>;
  readonly nameToId: ReadonlyMap<string, string>;
  readonly isKnownHead: HeadPredicate;
  /** Code with references bound, per secrets-set and source. */
  bindCode(source: string, secretNames: ReadonlySet<string>, secretsKey: string): BoundCode;
  /**
   * The graph entered at the entry block of type `entryType` (e.g. 'webhook'); this graph when that
   * is already its entry or the definition has no such block. Compiled once, then kept.
   */
  forEntry(entryType: string): CompiledGraph;
}

const CODE_CACHE_LIMIT = 2000;

function isRecord(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

export function compile(def: WorkflowDefinition, entryType?: string): CompiledGraph {
  // Save-time-only checks (block cap, output fields, code syntax) are left out: see analyzeDefinition.
  const { issues, analysis } = analyzeDefinition(def, {}, 'compile');
  if (issues.length > 0 || !analysis) throw new DefinitionError(issues);
  const entryId = (entryType !== undefined ? analysis.entryIds.get(entryType) : undefined) ?? analysis.startId;

  const blocks = new Map<string, CompiledBlock>();
  for (const [id, a] of analysis.blocks) {
    const type = a.type;
    const config = isRecord(a.config) ? a.config : {};
    const raw = new Set(type.rawFields ?? []);
    const rawConfig: Record<string, unknown> = {};
    const resolvable: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(config)) {
      if (raw.has(k)) rawConfig[k] = v;
      else resolvable[k] = v;
    }
    const secretNames = [
      ...new Set(
        collectTokens(config, analysis.isKnownHead)
          .map(({ token }) => (token.kind === 'secret' ? token.name : null))
          .filter((n): n is string => n !== null),
      ),
    ];
    blocks.set(id, {
      id,
      name: a.def.name,
      typeName: a.def.type,
      type,
      def: a.def,
      config,
      resolver: compileValue(resolvable, analysis.isKnownHead),
      rawConfig,
      secretNames,
      parentId: a.parentId,
      order: a.order,
      incoming: [],
      outgoing: [],
      hasErrorEdge: false,
      errorContained: false,
      retry: a.def.retry,
    });
  }

  for (const e of analysis.edges) {
    const edge: CompiledEdge = {
      from: e.from,
      to: e.to,
      kind: e.on === 'error' ? 'error' : e.branch !== undefined ? 'branch' : 'default',
      branch: e.branch,
    };
    const from = getOrThrow(blocks, e.from, 'block');
    const to = getOrThrow(blocks, e.to, 'block');
    from.outgoing.push(edge);
    to.incoming.push(edge);
    if (edge.kind === 'error') from.hasErrorEdge = true;
  }

  // errorContained: an enclosing container routes errors.
  for (const b of blocks.values()) {
    let p = b.parentId;
    while (p !== null) {
      const c = getOrThrow(blocks, p, 'block');
      if (c.hasErrorEdge) {
        b.errorContained = true;
        break;
      }
      p = c.parentId;
    }
  }

  const byParent = new Map<string | null, CompiledBlock[]>();
  for (const b of blocks.values()) {
    const list = byParent.get(b.parentId) ?? [];
    list.push(b);
    byParent.set(b.parentId, list);
  }
  for (const list of byParent.values()) list.sort((x, y) => x.order - y.order);

  // Top level: only blocks reachable from the entry block take part.
  const reachable = new Set<string>([entryId]);
  const stack = [entryId];
  for (let id = stack.pop(); id !== undefined; id = stack.pop()) {
    for (const e of getOrThrow(blocks, id, 'block').outgoing) {
      if (!reachable.has(e.to)) {
        reachable.add(e.to);
        stack.push(e.to);
      }
    }
  }
  for (const b of byParent.get(null) ?? []) {
    if (!reachable.has(b.id)) {
      // Drop edges from unreachable blocks so joins do not wait for them.
      for (const e of b.outgoing) {
        const t = getOrThrow(blocks, e.to, 'block');
        t.incoming = t.incoming.filter((x) => x !== e);
      }
    }
  }
  const root: CompiledScope = {
    containerId: null,
    kind: null,
    nodes: (byParent.get(null) ?? []).filter((b) => reachable.has(b.id)).map((b) => b.id),
    entries: [entryId],
  };

  for (const b of blocks.values()) {
    if (!b.type.container) continue;
    const children = byParent.get(b.id) ?? [];
    b.scope = {
      containerId: b.id,
      kind: b.type.container,
      nodes: children.map((c) => c.id),
      entries: children.filter((c) => c.incoming.length === 0).map((c) => c.id),
    };
  }

  const codeCache = new Map<string, BoundCode>();
  const isKnownHead = analysis.isKnownHead;
  const variants = new Map<string, CompiledGraph>();
  const graph: CompiledGraph = {
    definition: analysis.definition,
    blocks,
    root,
    startId: entryId,
    entryIds: analysis.entryIds,
    nameToId: analysis.nameToId,
    isKnownHead,
    forEntry(type) {
      const id = analysis.entryIds.get(type);
      if (id === undefined || id === entryId) return graph;
      let variant = variants.get(type);
      if (variant === undefined) {
        variant = compile(def, type);
        variants.set(type, variant);
      }
      return variant;
    },
    bindCode(source, secretNames, secretsKey) {
      const key = `${secretsKey}\u0001${source}`;
      let bound = codeCache.get(key);
      if (bound === undefined) {
        bound = bindCode(source, isKnownHead, (name) => secretNames.has(name));
        if (codeCache.size >= CODE_CACHE_LIMIT) codeCache.clear();
        codeCache.set(key, bound);
      }
      return bound;
    },
  };
  return graph;
}
