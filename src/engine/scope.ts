// The scope scheduler. A scope is the top level, one loop iteration or one parallel branch. It is
// event-driven: ready blocks start at once (bounded by the run's concurrency), a finished block
// activates or deactivates its outgoing edges by handle, deactivation cascades, and a block runs
// when all its incoming edges are resolved and at least one was taken. Containers run their
// children as nested scopes. Executing one block is node.ts's job; the scope gets it as a function handed
// down from run.ts, so node.ts (which needs the scope) and this file do not import each other.
import { ChildBlockError, type ScopeFrame, type ScopeHandle, type ScopeOutcome } from './block-type.js';
import type { CompiledBlock, CompiledEdge, CompiledGraph, CompiledScope } from './compile.js';
import { getOrThrow } from './lookup.js';
import type { SandboxResult } from './ports.js';
import { compileValue, ENTRY_HEADS, Resolution, type RefToken, type ResolveEnv } from './references.js';
import type { RunState } from './run-state.js';
import { errorMessage } from './trace.js';

export type NodeResult =
  | { kind: 'success'; output: unknown }
  | { kind: 'routed'; message: string }
  | { kind: 'failed'; error: ChildBlockError }
  | { kind: 'paused' }
  | { kind: 'stopped' };

/** Executes one block of a scope (node.ts's executeNode). */
export type NodeExecutor = (scope: ScopeRun, b: CompiledBlock) => Promise<NodeResult>;

interface NodeState {
  pending: number;
  taken: number;
  status: 'waiting' | 'running' | 'done' | 'skipped' | 'paused' | 'failed';
  tookEdge: boolean;
}

/** Shared by all scopes one container run creates; set when one of them fails. */
export interface HaltFlag {
  halted: boolean;
}

export interface ScopeInfo {
  containerId: string;
  kind: 'loop' | 'parallel';
  frame: ScopeFrame;
  /** Key suffix of this scope, e.g. "#outer:1#inner:0". */
  suffix: string;
}

export class ScopeRun implements ScopeHandle {
  readonly __scope = true as const;
  readonly outputs: Map<string, unknown>;
  private readonly states = new Map<string, NodeState>();
  private running = 0;
  private failure: ChildBlockError | null = null;
  private paused = false;
  private done = false;
  private resolveOutcome: (o: ScopeOutcome) => void = () => undefined;

  constructor(
    readonly run: RunState,
    readonly scope: CompiledScope,
    readonly parent: ScopeRun | null,
    readonly info: ScopeInfo | null,
    readonly halt: HaltFlag | null,
    private readonly executeNode: NodeExecutor,
    outputs?: Map<string, unknown>,
  ) {
    this.outputs = outputs ?? new Map();
  }

  get graph(): CompiledGraph {
    return this.run.graph;
  }

  get suffix(): string {
    return this.info?.suffix ?? '';
  }

  block(id: string): CompiledBlock {
    return getOrThrow(this.run.graph.blocks, id, 'block');
  }

  private state(id: string): NodeState {
    return getOrThrow(this.states, id, 'node');
  }

  /** A scope for iteration / branch `frame.index` of `container` (a child of this scope). */
  child(container: CompiledBlock, kind: 'loop' | 'parallel', frame: ScopeFrame, halt: HaltFlag, outputs?: Map<string, unknown>): ScopeRun {
    const scope = container.scope;
    if (scope === undefined) throw new Error(`internal: block ${container.id} has no children scope`);
    const info: ScopeInfo = { containerId: container.id, kind, frame, suffix: `${this.suffix}#${container.id}:${frame.index}` };
    return new ScopeRun(this.run, scope, this, info, halt, this.executeNode, outputs);
  }

  isHalted(): boolean {
    if (this.run.stopping || this.failure !== null) return true;
    return findUp(this, (s) => s.halt?.halted === true) !== null;
  }

  execute(): Promise<ScopeOutcome> {
    const promise = new Promise<ScopeOutcome>((resolve) => {
      this.resolveOutcome = resolve;
    });
    for (const id of this.scope.nodes) {
      const b = this.block(id);
      this.states.set(id, { pending: b.incoming.length, taken: 0, status: 'waiting', tookEdge: false });
    }
    for (const id of this.scope.entries) this.launch(id);
    this.checkDone();
    return promise;
  }

  // -- reference resolution ---------------------------------------------------------------------

  /** A new resolution (one block's config, one code call's bindings), bounded by the run's block output cap. */
  resolution(): Resolution {
    return new Resolution(this.run.maxBlockOutputBytes);
  }

  lookupRef(token: RefToken, res: Resolution = this.resolution()): unknown {
    const head = token.head;
    if (head === 'loop' || head === 'parallel') {
      const info = findUp(this, (s) => s.info?.kind === head)?.info;
      if (!info) return undefined;
      const field = token.path[0];
      return res.navigate(frameValue(info.frame, field), token.path.slice(1), info.frame, frameKey(field));
    }
    if (head === 'variable') return res.navigate(this.run.variables, token.path);
    const graph = this.run.graph;
    const id = ENTRY_HEADS.includes(head) ? graph.entryIds.get(head) : graph.nameToId.get(head);
    if (id === undefined) return undefined;
    const target = this.block(id);
    const owner = findUp(this, (s) => s.scope.containerId === target.parentId);
    return owner ? res.navigate(owner.outputs.get(id), token.path, owner.outputs, id) : undefined;
  }

  env(res: Resolution = this.resolution()): ResolveEnv {
    return {
      ref: (t) => this.lookupRef(t, res),
      secret: (n) => this.run.secret(n),
      value: (v) => res.value(v),
      interpolate: (v) => res.interpolate(v),
    };
  }

  /** The block's config with references resolved (raw fields left as written); throws past a resolution's bounds. */
  resolveConfig(b: CompiledBlock): Record<string, unknown> {
    if (b.resolver === null) return b.config;
    const resolved = b.resolver(this.env());
    const out: Record<string, unknown> = resolved !== null && typeof resolved === 'object' ? { ...resolved } : {};
    for (const k in b.rawConfig) out[k] = b.rawConfig[k];
    return out;
  }

  /** Resolves a raw config value on demand (blocks' raw fields; not cached, rarely used). */
  resolveLoose(value: unknown): unknown {
    const r = compileValue(value, this.run.graph.isKnownHead);
    return r === null ? value : r(this.env());
  }

  /** Runs code through the sandbox; references resolve in this scope and are injected as bindings. */
  runCode(source: string, opts: { timeoutMs: number; http?: boolean }): Promise<SandboxResult> {
    const run = this.run;
    const bound = run.graph.bindCode(source, run.secretNames, run.secretsKey);
    const bindings: Record<string, unknown> = {};
    try {
      const res = this.resolution();
      for (const binding of bound.bindings) {
        const t = binding.token;
        let v: unknown = t.kind === 'ref' ? this.lookupRef(t, res) : run.secret(t.name);
        // The sandbox takes the bindings as one JSON text: a value bound under many names is written each time.
        if (binding.mode === 'string') v = res.interpolate(v);
        else v = res.value(v === undefined ? null : v);
        bindings[binding.name] = v;
      }
    } catch (err) {
      return Promise.reject(err instanceof Error ? err : new Error(String(err)));
    }
    return run.opts.ports.sandbox.run({
      code: bound.code,
      bindings,
      timeoutMs: opts.timeoutMs,
      signal: run.signal,
      http: opts.http ? run.opts.ports.http : undefined,
    });
  }

  /**
   * True when `b`, running now, is the run's last block that does anything: it is at the top level, nothing
   * else of the run is running, no block has failed or paused, and its edges lead only to response blocks
   * (pure, and they end the run) or nowhere. The run's final state follows at once, so its step record is
   * worth nothing once that is written (docs/architecture.md, Run lifecycle).
   */
  isLastBlock(b: CompiledBlock): boolean {
    return this.parent === null && this.running === 1 && this.failure === null && !this.paused && !this.run.stopping
      && b.outgoing.every((e) => {
        const next = this.block(e.to).type;
        return next.pure === true && next.endsRun === true;
      });
  }

  // -- scheduling -------------------------------------------------------------------------------

  private launch(id: string): void {
    const st = this.state(id);
    if (st.status !== 'waiting') return;
    if (this.isHalted()) return;
    st.status = 'running';
    this.running++;
    let result: Promise<NodeResult>;
    try {
      result = this.executeNode(this, this.block(id));
    } catch (err) {
      result = Promise.resolve(this.internalFailure(id, err));
    }
    result.then(
      (r) => this.settle(id, r),
      (err: unknown) => this.settle(id, this.internalFailure(id, err)),
    );
  }

  private internalFailure(id: string, err: unknown): NodeResult {
    const b = this.block(id);
    const msg = errorMessage(err);
    return { kind: 'failed', error: new ChildBlockError(`Block "${b.name}" failed: ${msg}`, b.id, b.name, msg) };
  }

  private settle(id: string, r: NodeResult): void {
    const st = this.state(id);
    const b = this.block(id);
    this.running--;
    switch (r.kind) {
      case 'success': {
        st.status = 'done';
        this.outputs.set(id, r.output);
        const selected = b.type.selectBranch ? b.type.selectBranch(r.output) : null;
        for (const e of b.outgoing) {
          const take = e.kind === 'default' || (e.kind === 'branch' && e.branch === selected);
          this.resolveEdge(e, take, st);
        }
        break;
      }
      case 'routed': {
        st.status = 'done';
        this.outputs.set(id, { error: r.message });
        for (const e of b.outgoing) this.resolveEdge(e, e.kind === 'error', st);
        break;
      }
      case 'failed': {
        st.status = 'failed';
        if (this.failure === null) this.failure = r.error;
        if (!b.errorContained) this.run.fail({ message: r.error.message, blockId: r.error.blockId, blockName: r.error.blockName });
        break;
      }
      case 'paused':
        st.status = 'paused';
        this.paused = true;
        break;
      case 'stopped':
        st.status = 'waiting';
        break;
    }
    this.checkDone();
  }

  private resolveEdge(e: CompiledEdge, take: boolean, source: NodeState): void {
    const t = this.states.get(e.to);
    if (t === undefined) return;
    t.pending--;
    if (take) {
      t.taken++;
      source.tookEdge = true;
    }
    if (t.pending === 0 && t.status === 'waiting') {
      if (t.taken > 0) this.launch(e.to);
      else this.skip(e.to);
    }
  }

  private skip(id: string): void {
    const st = this.state(id);
    st.status = 'skipped';
    for (const e of this.block(id).outgoing) this.resolveEdge(e, false, st);
  }

  private checkDone(): void {
    if (this.done || this.running > 0) return;
    this.done = true;
    if (this.failure !== null) this.resolveOutcome({ status: 'failed', error: this.failure });
    else if (this.isHalted()) this.resolveOutcome({ status: 'stopped' });
    else if (this.paused) this.resolveOutcome({ status: 'paused' });
    else this.resolveOutcome({ status: 'completed', output: this.leafOutput(), scope: this });
  }

  /** Output of the executed leaf (no taken outgoing edge) that comes last in definition order. */
  leafOutput(): unknown {
    let best: CompiledBlock | null = null;
    for (const [id, st] of this.states) {
      if (st.status !== 'done' || st.tookEdge) continue;
      const b = this.block(id);
      if (best === null || b.order > best.order) best = b;
    }
    if (best === null) return null;
    const out = this.outputs.get(best.id);
    return out === undefined ? null : out;
  }
}

/** The first scope, from `start` outwards, that matches. */
export function findUp(start: ScopeRun, match: (s: ScopeRun) => boolean): ScopeRun | null {
  for (let s: ScopeRun | null = start; s !== null; s = s.parent) if (match(s)) return s;
  return null;
}

/** The frame's own key `field` reads (for remembering JSON text parsed from it); undefined when it has none. */
function frameKey(field: string | number | undefined): string | undefined {
  if (field === 'currentItem' || field === 'item') return 'currentItem';
  return field === 'items' ? 'items' : undefined;
}

function frameValue(frame: ScopeFrame, field: string | number | undefined): unknown {
  switch (field) {
    case undefined:
      return { index: frame.index, currentItem: frame.currentItem, items: frame.items };
    case 'index':
    case 'iteration':
      return frame.index;
    case 'currentItem':
    case 'item':
      return frame.currentItem;
    case 'items':
      return frame.items;
    default:
      return undefined;
  }
}
