// The scheduler. Event-driven per scope (the top level, one loop iteration, one parallel branch):
// ready blocks start at once (bounded by the run's concurrency), a finished block activates or
// deactivates its outgoing edges by handle, deactivation cascades, and a block runs when all its
// incoming edges are resolved and at least one was taken. Containers run their children as
// nested scopes. Durable replay: a block whose step key is in `recorded` is not run again.
import {
  ChildBlockError,
  RunStoppedError,
  type BlockContext,
  type BlockResult,
  type ContainerControl,
  type ScopeFrame,
  type ScopeHandle,
  type ScopeOutcome,
} from './block-type.js';
import type { CompiledBlock, CompiledEdge, CompiledGraph, CompiledScope } from './compile.js';
import { realClock } from './ports.js';
import { compileValue, formatInterpolated, navigate, type RefToken, type ResolveEnv } from './references.js';
import type {
  BlockTrace,
  ClockPort,
  PausePoint,
  RunOptions,
  RunResult,
  SandboxLogEntry,
  SandboxResult,
  StepRecord,
} from './types.js';

const DEFAULTS = { maxConcurrency: 32, loopCap: 1000, parallelFanOut: 20, maxParallelBranches: 1000 };
const TRACE_INPUT_LIMIT = 2048;
const MAX_TRACE_LOGS = 1000;

interface Failure {
  message: string;
  blockId?: string;
  blockName?: string;
}

class Semaphore {
  private free: number;
  private readonly waiters: (() => void)[] = [];

  constructor(size: number) {
    this.free = Math.max(1, size);
  }

  acquire(): Promise<void> | null {
    if (this.free > 0) {
      this.free--;
      return null;
    }
    return new Promise<void>((resolve) => this.waiters.push(resolve));
  }

  release(): void {
    const next = this.waiters.shift();
    if (next) next();
    else this.free++;
  }
}

function errorMessage(err: unknown): string {
  if (err instanceof Error) return err.message;
  return typeof err === 'string' ? err : formatInterpolated(err) || 'unknown error';
}

function errorLogs(err: unknown): SandboxLogEntry[] | undefined {
  if (err !== null && typeof err === 'object' && Array.isArray((err as { logs?: unknown }).logs)) {
    return (err as { logs: SandboxLogEntry[] }).logs;
  }
  return undefined;
}

function hasOwn(obj: object, key: string): boolean {
  return Object.prototype.hasOwnProperty.call(obj, key);
}

// ---------------------------------------------------------------------------------------------
// Run state
// ---------------------------------------------------------------------------------------------

class RunState {
  readonly clock: ClockPort;
  readonly controller = new AbortController();
  readonly trace: BlockTrace[] = [];
  readonly pausePoints: PausePoint[] = [];
  readonly variables: Record<string, unknown>;
  variablesVersion = 0;
  readonly semaphore: Semaphore;
  readonly limits: BlockContext['limits'];
  readonly secrets: Record<string, string>;
  readonly secretNames: ReadonlySet<string>;
  readonly secretsKey: string;
  readonly depth: number;
  readonly deadline: number;
  readonly startedAtMs: number;
  readonly startedAtWall: number;

  stopping = false;
  finished = false;
  stopReason: 'failed' | 'response' | 'cancelled' | 'timed_out' | null = null;
  failure: Failure | null = null;
  response: RunResult['response'];
  responseOutput: unknown;

  private stopResolve!: () => void;
  /** Resolves when the run must return without waiting (response, cancellation, timeout). */
  readonly stopped: Promise<void> = new Promise<void>((resolve) => {
    this.stopResolve = resolve;
  });
  private timer: ReturnType<typeof setTimeout> | undefined;
  private readonly onExternalAbort = () => this.cancel('cancelled', 'Run cancelled');

  constructor(readonly graph: CompiledGraph, readonly opts: RunOptions) {
    this.clock = opts.ports.clock ?? realClock;
    this.startedAtMs = this.clock.now();
    this.startedAtWall = Date.now();
    this.variables = { ...(graph.definition.variables ?? {}), ...(opts.variables ?? {}) };
    this.semaphore = new Semaphore(opts.maxConcurrency ?? DEFAULTS.maxConcurrency);
    this.limits = {
      loopCap: opts.loopCap ?? DEFAULTS.loopCap,
      parallelFanOut: Math.max(1, opts.parallelFanOut ?? DEFAULTS.parallelFanOut),
      maxParallelBranches: opts.maxParallelBranches ?? DEFAULTS.maxParallelBranches,
    };
    this.secrets = opts.secrets ?? {};
    const names = Object.keys(this.secrets).sort();
    this.secretNames = new Set(names);
    this.secretsKey = names.join(',');
    this.depth = opts.depth ?? 0;
    this.deadline = opts.timeoutMs !== undefined ? this.startedAtMs + opts.timeoutMs : Infinity;

    if (opts.signal) {
      if (opts.signal.aborted) this.cancel('cancelled', 'Run cancelled');
      else opts.signal.addEventListener('abort', this.onExternalAbort, { once: true });
    }
    if (opts.timeoutMs !== undefined && !this.stopping) {
      this.timer = setTimeout(() => this.cancel('timed_out', `Run timed out after ${opts.timeoutMs} ms`), Math.max(0, opts.timeoutMs));
    }
  }

  get signal(): AbortSignal {
    return this.controller.signal;
  }

  remainingMs(): number {
    return this.deadline === Infinity ? Infinity : Math.max(0, this.deadline - this.clock.now());
  }

  secret(name: string): string | undefined {
    return hasOwn(this.secrets, name) ? this.secrets[name] : undefined;
  }

  cancel(reason: 'cancelled' | 'timed_out', message: string): void {
    if (this.finished || this.stopReason === 'cancelled' || this.stopReason === 'timed_out' || this.stopReason === 'response') return;
    this.stopping = true;
    this.stopReason = reason;
    this.failure = { message };
    this.controller.abort(new Error(message));
    this.stopResolve();
  }

  fail(failure: Failure): void {
    if (this.stopping) return;
    this.stopping = true;
    this.stopReason = 'failed';
    this.failure = failure;
  }

  respond(output: unknown): void {
    if (this.stopping) return;
    this.stopping = true;
    this.stopReason = 'response';
    const o = (output ?? {}) as Record<string, unknown>;
    const headers = (o.headers !== null && typeof o.headers === 'object' ? o.headers : {}) as Record<string, string>;
    this.response = { data: o.data === undefined ? null : o.data, status: typeof o.status === 'number' ? o.status : 200, headers };
    this.responseOutput = output;
    this.controller.abort(new Error('Run ended by a Response block'));
    this.stopResolve();
  }

  dispose(): void {
    this.finished = true;
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.opts.signal?.removeEventListener('abort', this.onExternalAbort);
    if (!this.controller.signal.aborted) this.controller.abort(new Error('Run finished'));
  }

  addTrace(entry: BlockTrace): void {
    if (!this.finished) this.trace.push(entry);
  }
}

// ---------------------------------------------------------------------------------------------
// Scopes
// ---------------------------------------------------------------------------------------------

interface NodeState {
  pending: number;
  taken: number;
  status: 'waiting' | 'running' | 'done' | 'skipped' | 'paused' | 'failed';
  tookEdge: boolean;
}

type NodeResult =
  | { kind: 'success'; output: unknown }
  | { kind: 'routed'; message: string }
  | { kind: 'failed'; error: ChildBlockError }
  | { kind: 'paused' }
  | { kind: 'stopped' };

/** Shared by all scopes one container run creates; set when one of them fails. */
interface HaltFlag {
  halted: boolean;
}

interface ScopeInfo {
  containerId: string;
  kind: 'loop' | 'parallel';
  frame: ScopeFrame;
  /** Key suffix of this scope, e.g. "#outer:1#inner:0". */
  suffix: string;
}

class ScopeRun implements ScopeHandle {
  readonly __scope = true as const;
  readonly outputs: Map<string, unknown>;
  private readonly states = new Map<string, NodeState>();
  private running = 0;
  private failure: ChildBlockError | null = null;
  private paused = false;
  private done = false;
  private resolveOutcome!: (o: ScopeOutcome) => void;

  constructor(
    readonly run: RunState,
    readonly scope: CompiledScope,
    readonly parent: ScopeRun | null,
    readonly info: ScopeInfo | null,
    readonly halt: HaltFlag | null,
    outputs?: Map<string, unknown>,
  ) {
    this.outputs = outputs ?? new Map();
  }

  get suffix(): string {
    return this.info?.suffix ?? '';
  }

  isHalted(): boolean {
    if (this.run.stopping || this.failure !== null) return true;
    return findUp(this, (s) => s.halt?.halted === true) !== null;
  }

  execute(): Promise<ScopeOutcome> {
    const promise = new Promise<ScopeOutcome>((resolve) => {
      this.resolveOutcome = resolve;
    });
    const graph = this.run.graph;
    for (const id of this.scope.nodes) {
      const b = graph.blocks.get(id) as CompiledBlock;
      this.states.set(id, { pending: b.incoming.length, taken: 0, status: 'waiting', tookEdge: false });
    }
    for (const id of this.scope.entries) this.launch(id);
    this.checkDone();
    return promise;
  }

  // -- reference resolution ---------------------------------------------------------------------

  lookupRef(token: RefToken): unknown {
    const head = token.head;
    if (head === 'loop' || head === 'parallel') {
      const info = findUp(this, (s) => s.info?.kind === head)?.info;
      return info ? navigate(frameValue(info.frame, token.path[0]), token.path.slice(1)) : undefined;
    }
    if (head === 'variable') return navigate(this.run.variables, token.path);
    const graph = this.run.graph;
    const id = head === 'start' ? graph.startId : graph.nameToId.get(head);
    if (id === undefined) return undefined;
    const target = graph.blocks.get(id) as CompiledBlock;
    const owner = findUp(this, (s) => s.scope.containerId === target.parentId);
    return owner ? navigate(owner.outputs.get(id), token.path) : undefined;
  }

  env(): ResolveEnv {
    return { ref: (t) => this.lookupRef(t), secret: (n) => this.run.secret(n) };
  }

  // -- scheduling -------------------------------------------------------------------------------

  private launch(id: string): void {
    const st = this.states.get(id) as NodeState;
    if (st.status !== 'waiting') return;
    if (this.isHalted()) return;
    st.status = 'running';
    this.running++;
    let result: Promise<NodeResult>;
    try {
      result = this.execNode(id);
    } catch (err) {
      result = Promise.resolve(this.internalFailure(id, err));
    }
    result.then(
      (r) => this.settle(id, r),
      (err: unknown) => this.settle(id, this.internalFailure(id, err)),
    );
  }

  private internalFailure(id: string, err: unknown): NodeResult {
    const b = this.run.graph.blocks.get(id) as CompiledBlock;
    const msg = errorMessage(err);
    return { kind: 'failed', error: new ChildBlockError(`Block "${b.name}" failed: ${msg}`, b.id, b.name, msg) };
  }

  private settle(id: string, r: NodeResult): void {
    const st = this.states.get(id) as NodeState;
    const b = this.run.graph.blocks.get(id) as CompiledBlock;
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
    const st = this.states.get(id) as NodeState;
    st.status = 'skipped';
    const b = this.run.graph.blocks.get(id) as CompiledBlock;
    for (const e of b.outgoing) this.resolveEdge(e, false, st);
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
      const b = this.run.graph.blocks.get(id) as CompiledBlock;
      if (best === null || b.order > best.order) best = b;
    }
    if (best === null) return null;
    const out = this.outputs.get(best.id);
    return out === undefined ? null : out;
  }

  // -- executing one block ----------------------------------------------------------------------

  private async execNode(id: string): Promise<NodeResult> {
    const run = this.run;
    const b = run.graph.blocks.get(id) as CompiledBlock;
    const key = b.id + this.suffix;

    const rec = run.opts.recorded?.get(key);
    if (rec !== undefined) return this.replay(b, key, rec);

    if (b.type.container) return this.execContainer(b, key);

    const wait = run.semaphore.acquire();
    if (wait !== null) await wait;
    try {
      if (this.isHalted()) return { kind: 'stopped' };
      return await this.execLeaf(b, key);
    } finally {
      run.semaphore.release();
    }
  }

  private replay(b: CompiledBlock, key: string, rec: StepRecord): NodeResult {
    const run = this.run;
    if (rec.variables) {
      Object.assign(run.variables, rec.variables);
      run.variablesVersion++;
    }
    run.addTrace({
      key, blockId: b.id, name: b.name, type: b.typeName, status: 'replayed',
      startedAt: new Date().toISOString(), durationMs: 0, output: rec.output,
      ...(rec.error !== undefined ? { error: rec.error } : {}),
    });
    if (rec.error !== undefined) {
      if (b.hasErrorEdge) return { kind: 'routed', message: rec.error };
      return { kind: 'failed', error: new ChildBlockError(`Block "${b.name}" failed: ${rec.error}`, b.id, b.name, rec.error) };
    }
    if (b.type.endsRun) run.respond(rec.output);
    return { kind: 'success', output: rec.output };
  }

  private makeContext(b: CompiledBlock, key: string, logs: SandboxLogEntry[], varsChanged: { value: boolean }, container?: ContainerControl): BlockContext {
    const run = this.run;
    return {
      blockId: b.id,
      name: b.name,
      type: b.typeName,
      key,
      ports: run.opts.ports,
      signal: run.signal,
      clock: run.clock,
      depth: run.depth,
      input: run.opts.input,
      variables: run.variables,
      limits: run.limits,
      remainingMs: () => run.remainingMs(),
      setVariables: (values) => {
        Object.assign(run.variables, values);
        run.variablesVersion++;
        varsChanged.value = true;
      },
      resolve: (value) => resolveLoose(value, this),
      runCode: (source, opts) => this.runCode(source, opts, this),
      log: (level, message) => {
        if (logs.length < MAX_TRACE_LOGS) logs.push({ level, message });
      },
      container,
    };
  }

  runCode(source: string, opts: { timeoutMs: number; http?: boolean }, scope: ScopeRun): Promise<SandboxResult> {
    const run = this.run;
    const bound = run.graph.bindCode(source, run.secretNames, run.secretsKey);
    const bindings: Record<string, unknown> = {};
    for (const binding of bound.bindings) {
      const t = binding.token;
      let v: unknown = t.kind === 'ref' ? scope.lookupRef(t) : run.secret(t.name);
      if (binding.mode === 'string') v = formatInterpolated(v);
      else if (v === undefined) v = null;
      bindings[binding.name] = v;
    }
    return run.opts.ports.sandbox.run({
      code: bound.code,
      bindings,
      timeoutMs: opts.timeoutMs,
      signal: run.signal,
      http: opts.http ? run.opts.ports.http : undefined,
    });
  }

  private resolveConfig(b: CompiledBlock): Record<string, unknown> {
    if (b.resolver === null) return b.config;
    const resolved = b.resolver(this.env()) as Record<string, unknown>;
    for (const k in b.rawConfig) resolved[k] = b.rawConfig[k];
    return resolved;
  }

  private async execLeaf(b: CompiledBlock, key: string): Promise<NodeResult> {
    const run = this.run;
    const startedAtWall = Date.now();
    const t0 = run.clock.now();
    const logs: SandboxLogEntry[] = [];
    const varsChanged = { value: false };
    let config: Record<string, unknown> | undefined;
    let result: BlockResult | undefined;
    let error: unknown;
    let attempts = 0;
    const maxAttempts = b.type.retryable === false ? 1 : b.retry?.maxAttempts ?? 1;
    try {
      config = this.resolveConfig(b);
      const ctx = this.makeContext(b, key, logs, varsChanged);
      for (;;) {
        attempts++;
        try {
          result = await b.type.run(ctx, config as never);
          error = undefined;
          break;
        } catch (err) {
          error = err;
          const l = errorLogs(err);
          if (l) for (const entry of l) if (logs.length < MAX_TRACE_LOGS) logs.push(entry);
          if (attempts >= maxAttempts || run.signal.aborted || err instanceof RunStoppedError) break;
          const backoff = (b.retry?.backoffMs ?? 0) * 2 ** (attempts - 1);
          if (backoff > 0) {
            try {
              await run.clock.sleep(Math.min(backoff, run.remainingMs()), run.signal);
            } catch {
              break;
            }
          }
          if (this.isHalted()) break;
        }
      }
    } catch (err) {
      error = err;
    }
    if (run.finished || (run.stopping && run.stopReason !== 'failed')) return { kind: 'stopped' };

    const durationMs = run.clock.now() - t0;
    const base = {
      key, blockId: b.id, name: b.name, type: b.typeName,
      startedAt: new Date(startedAtWall).toISOString(), durationMs,
      ...(config !== undefined ? { input: summarizeInput(config, b, run) } : {}),
      ...(logs.length ? { logs } : {}),
      ...(attempts > 1 ? { attempts } : {}),
    };

    if (error !== undefined || result === undefined) {
      const message = errorMessage(error);
      run.addTrace({ ...base, status: 'error', error: message });
      if (error instanceof RunStoppedError) return { kind: 'stopped' };
      if (b.hasErrorEdge && !run.stopping) {
        const recorded = await this.record({ key, blockId: b.id, output: { error: message }, error: message });
        if (recorded !== null) return recorded;
        return { kind: 'routed', message };
      }
      return { kind: 'failed', error: new ChildBlockError(`Block "${b.name}" failed: ${message}`, b.id, b.name, message) };
    }

    if ('pause' in result) {
      run.addTrace({ ...base, status: 'paused' });
      if (result.pause !== null) run.pausePoints.push(this.pausePoint(b, key, result.pause.response));
      return { kind: 'paused' };
    }

    const output = result.output === undefined ? null : result.output;
    if (result.logs) for (const entry of result.logs) if (logs.length < MAX_TRACE_LOGS) logs.push(entry);
    run.addTrace({ ...base, ...(logs.length ? { logs } : {}), status: 'success', output });
    const step: StepRecord = { key, blockId: b.id, output };
    if (varsChanged.value) step.variables = { ...run.variables };
    const recorded = await this.record(step);
    if (recorded !== null) return recorded;
    if (b.type.endsRun) run.respond(output);
    return { kind: 'success', output };
  }

  /** Awaits onStep; a failure to record fails the run. Returns null when recorded. */
  private async record(step: StepRecord): Promise<NodeResult | null> {
    const run = this.run;
    if (!run.opts.onStep) return null;
    try {
      await run.opts.onStep(step);
      return null;
    } catch (err) {
      const b = run.graph.blocks.get(step.blockId) as CompiledBlock;
      const msg = `could not record the step: ${errorMessage(err)}`;
      return { kind: 'failed', error: new ChildBlockError(`Block "${b.name}" failed: ${msg}`, b.id, b.name, msg) };
    }
  }

  private pausePoint(b: CompiledBlock, key: string, response: unknown): PausePoint {
    let contextId = b.id;
    const frames: ScopeInfo[] = [];
    findUp(this, (s) => {
      if (s.info) frames.unshift(s.info);
      return false;
    });
    let parallelScope: PausePoint['parallelScope'];
    let loopScope: PausePoint['loopScope'];
    for (const f of frames) {
      if (f.kind === 'parallel') {
        contextId += `_p${f.frame.index}`;
        parallelScope = { parallelId: f.containerId, branchIndex: f.frame.index, branchTotal: f.frame.total ?? 0 };
      } else {
        contextId += `_loop${f.frame.index}`;
        loopScope = { loopId: f.containerId, iteration: f.frame.index };
      }
    }
    return {
      contextId, blockId: b.id, key, response,
      ...(parallelScope ? { parallelScope } : {}),
      ...(loopScope ? { loopScope } : {}),
    };
  }

  private async execContainer(b: CompiledBlock, key: string): Promise<NodeResult> {
    const run = this.run;
    if (this.isHalted()) return { kind: 'stopped' };
    const startedAtWall = Date.now();
    const t0 = run.clock.now();
    const logs: SandboxLogEntry[] = [];
    const varsChanged = { value: false };
    const versionBefore = run.variablesVersion;
    const halt: HaltFlag = { halted: false };
    const scope = b.scope as CompiledScope;
    const kind = b.type.container as 'loop' | 'parallel';
    const control: ContainerControl = {
      kind,
      runScope: async (frame) => {
        const info: ScopeInfo = { containerId: b.id, kind, frame, suffix: `${this.suffix}#${b.id}:${frame.index}` };
        const child = new ScopeRun(run, scope, this, info, halt);
        const outcome = await child.execute();
        if (outcome.status === 'failed') halt.halted = true;
        return outcome;
      },
      evaluate: async (source, frame, previous) => {
        const info: ScopeInfo = { containerId: b.id, kind, frame, suffix: `${this.suffix}#${b.id}:${frame.index}` };
        const prevOutputs = previous instanceof ScopeRun ? previous.outputs : new Map<string, unknown>();
        const view = new ScopeRun(run, scope, this, info, halt, prevOutputs);
        const timeoutMs = Math.max(1, Math.min(5000, run.remainingMs()));
        const res = await this.runCode(source, { timeoutMs }, view);
        for (const entry of res.logs) if (logs.length < MAX_TRACE_LOGS) logs.push(entry);
        return res.value;
      },
      stopped: () => halt.halted || this.isHalted(),
    };
    let config: Record<string, unknown> | undefined;
    let result: BlockResult | undefined;
    let error: unknown;
    try {
      config = this.resolveConfig(b);
      const ctx = this.makeContext(b, key, logs, varsChanged, control);
      result = await b.type.run(ctx, config as never);
    } catch (err) {
      error = err;
    }
    if (run.finished || (run.stopping && run.stopReason !== 'failed')) return { kind: 'stopped' };
    if (error instanceof RunStoppedError) return { kind: 'stopped' };

    const base = {
      key, blockId: b.id, name: b.name, type: b.typeName,
      startedAt: new Date(startedAtWall).toISOString(), durationMs: run.clock.now() - t0,
      ...(config !== undefined ? { input: summarizeInput(config, b, run) } : {}),
      ...(logs.length ? { logs } : {}),
    };
    if (error !== undefined || result === undefined) {
      const child = error instanceof ChildBlockError ? error : null;
      const message = child ? child.message : errorMessage(error);
      run.addTrace({ ...base, status: 'error', error: message });
      if (b.hasErrorEdge && !run.stopping) {
        const recorded = await this.record({ key, blockId: b.id, output: { error: message }, error: message });
        if (recorded !== null) return recorded;
        return { kind: 'routed', message };
      }
      if (child) return { kind: 'failed', error: child };
      return { kind: 'failed', error: new ChildBlockError(`Block "${b.name}" failed: ${message}`, b.id, b.name, message) };
    }
    if ('pause' in result) {
      run.addTrace({ ...base, status: 'paused' });
      if (result.pause !== null) run.pausePoints.push(this.pausePoint(b, key, result.pause.response));
      return { kind: 'paused' };
    }
    const output = result.output === undefined ? null : result.output;
    run.addTrace({ ...base, status: 'success', output });
    const step: StepRecord = { key, blockId: b.id, output };
    if (varsChanged.value || run.variablesVersion !== versionBefore) step.variables = { ...run.variables };
    const recorded = await this.record(step);
    if (recorded !== null) return recorded;
    return { kind: 'success', output };
  }
}

/** The first scope, from `start` outwards, that matches. */
function findUp(start: ScopeRun, match: (s: ScopeRun) => boolean): ScopeRun | null {
  for (let s: ScopeRun | null = start; s !== null; s = s.parent) if (match(s)) return s;
  return null;
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

/** Resolves a raw config value on demand (blocks' raw fields; not cached, rarely used). */
function resolveLoose(value: unknown, scope: ScopeRun): unknown {
  const r = compileValue(value, scope.run.graph.isKnownHead);
  return r === null ? value : r(scope.env());
}

function summarizeInput(config: Record<string, unknown>, b: CompiledBlock, run: RunState): unknown {
  let json: string | undefined;
  try {
    json = JSON.stringify(config);
  } catch {
    return '[unserializable]';
  }
  if (json === undefined) return undefined;
  let masked = false;
  for (const name of b.secretNames) {
    const value = run.secret(name);
    if (value !== undefined && value.length > 0) {
      const escaped = JSON.stringify(value).slice(1, -1);
      if (json.includes(escaped)) {
        json = json.split(escaped).join('***');
        masked = true;
      }
    }
  }
  if (json.length > TRACE_INPUT_LIMIT) return `${json.slice(0, TRACE_INPUT_LIMIT)}…`;
  if (!masked) return config;
  try {
    return JSON.parse(json) as unknown;
  } catch {
    return json;
  }
}

// ---------------------------------------------------------------------------------------------
// Entry point
// ---------------------------------------------------------------------------------------------

export async function runWorkflow(graph: CompiledGraph, opts: RunOptions): Promise<RunResult> {
  const run = new RunState(graph, opts);
  let outcome: ScopeOutcome | null = null;
  if (!run.stopping) {
    const root = new ScopeRun(run, graph.root, null, null, null);
    outcome = await Promise.race([root.execute(), run.stopped.then(() => null)]);
  }
  const endedMs = run.clock.now();
  const endedAt = new Date().toISOString();
  const trace = run.trace.slice();
  const pausePoints = run.pausePoints.slice();
  run.dispose();

  const base = {
    trace,
    variables: { ...run.variables },
    startedAt: new Date(run.startedAtWall).toISOString(),
    endedAt,
    durationMs: Math.max(0, endedMs - run.startedAtMs),
  };
  if (run.stopReason === 'cancelled' || run.stopReason === 'timed_out') {
    return { ...base, status: run.stopReason, output: null, error: { message: run.failure?.message ?? 'Run stopped' } };
  }
  if (run.stopReason === 'response') {
    return { ...base, status: 'completed', output: run.responseOutput, response: run.response };
  }
  if (run.stopReason === 'failed' || outcome?.status === 'failed') {
    const f = run.failure ?? (outcome?.status === 'failed' && outcome.error instanceof ChildBlockError
      ? { message: outcome.error.message, blockId: outcome.error.blockId, blockName: outcome.error.blockName }
      : { message: outcome?.status === 'failed' ? outcome.error.message : 'Run failed' });
    return {
      ...base, status: 'failed', output: null,
      error: { message: f.message, ...(f.blockId !== undefined ? { blockId: f.blockId } : {}), ...(f.blockName !== undefined ? { blockName: f.blockName } : {}) },
    };
  }
  if (outcome?.status === 'paused') {
    return { ...base, status: 'paused', output: null, pausePoints };
  }
  if (outcome?.status === 'completed') {
    return { ...base, status: 'completed', output: outcome.output };
  }
  return { ...base, status: 'failed', output: null, error: { message: 'Run stopped unexpectedly' } };
}
