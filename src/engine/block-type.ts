// The contract every block type implements. One file per type in ./blocks, registered in one
// list (./blocks/index.ts); the engine never switches on type names.
import type { z } from 'zod';
import type { ChildRunResult, ClockPort, EnginePorts, SandboxLogEntry, SandboxResult } from './ports.js';

/** Values a loop iteration or parallel branch exposes as <loop.*> / <parallel.*>. */
export interface ScopeFrame {
  index: number;
  currentItem: unknown;
  items: unknown;
  /** Number of branches (parallel) or planned iterations when known. */
  total?: number;
}

/** Opaque handle of a finished iteration scope (used to evaluate a loop condition against it). */
export interface ScopeHandle {
  readonly __scope: true;
}

export type ScopeOutcome =
  | { status: 'completed'; output: unknown; scope: ScopeHandle }
  | { status: 'paused' }
  | { status: 'failed'; error: Error }
  | { status: 'stopped' };

/** What a container block (loop, parallel) can do with its children. */
export interface ContainerControl {
  readonly kind: 'loop' | 'parallel';
  /** Runs the children once, as iteration / branch `frame.index`. */
  runScope(frame: ScopeFrame): Promise<ScopeOutcome>;
  /**
   * Evaluates code (an async function body) whose references resolve as inside the iteration
   * described by `frame`; references to children read the finished scope `previous` (or null).
   */
  evaluate(source: string, frame: ScopeFrame, previous: ScopeHandle | null): Promise<unknown>;
  /** True once nothing new may start (run failed, ended, cancelled). */
  stopped(): boolean;
}

export interface BlockContext {
  readonly blockId: string;
  readonly name: string;
  readonly type: string;
  /** Step key: block id plus scope, e.g. "fetch#each:2". */
  readonly key: string;
  readonly ports: EnginePorts;
  readonly signal: AbortSignal;
  readonly clock: ClockPort;
  /** Nesting depth of child workflows (0 at the top). */
  readonly depth: number;
  /** Raw caller input of the run. */
  readonly input: Record<string, unknown>;
  readonly variables: Readonly<Record<string, unknown>>;
  readonly limits: { readonly loopCap: number; readonly parallelFanOut: number; readonly maxParallelBranches: number };
  /** Remaining run time in ms (Infinity without a run timeout). */
  remainingMs(): number;
  /** Updates run variables (visible to later <variable.name>); recorded with the step. */
  setVariables(values: Record<string, unknown>): void;
  /**
   * The value of a workspace secret, fetched through the secrets port; from then on the run masks it
   * in everything it reports. Rejects naming the secret when it is not set.
   */
  secret(name: string): Promise<string>;
  /** Resolves references/secrets in a raw config value (for fields listed in `rawFields`). */
  resolve(value: unknown): unknown;
  /**
   * Runs code through the sandbox port. References in the code become injected bindings, never
   * pasted text. `fetch` is available when `http` is true.
   */
  runCode(source: string, opts: { timeoutMs: number; http?: boolean }): Promise<SandboxResult>;
  /**
   * Runs a deployed workflow through the child-workflow port, one level deeper, as a child run in this run's
   * tree (one step budget, held-output bound, concurrency and pacing for all of them). The block's concurrency
   * slot is lent to the tree while the child runs. Throws when the run has no child-workflow port.
   */
  runChild(workflowId: string, input: Record<string, unknown>): Promise<ChildRunResult>;
  /** Adds a line to the block's trace logs. */
  log(level: SandboxLogEntry['level'], message: string): void;
  /** Present for container types only. */
  readonly container?: ContainerControl;
}

export type BlockResult =
  | { output: unknown; logs?: SandboxLogEntry[] }
  /** Pause this branch. `response` is shown to the person resuming; null when a child paused. */
  | { pause: { response: unknown } | null };

export interface BlockType<C = unknown> {
  type: string;
  /** Validated when a definition is saved; feeds editor forms and OpenAPI. */
  config: z.ZodType<C>;
  /** Loop-like or parallel-like container holding child blocks. */
  container?: 'loop' | 'parallel';
  /** Outgoing branch names for `branch` edges (e.g. condition ids). */
  handles?(config: C): string[];
  /** Selected branch, from the block output (also works on replayed outputs). */
  selectBranch?(output: unknown): string | null;
  /** Top-level config keys passed unresolved (code, expressions, lazily evaluated fields). */
  rawFields?: readonly string[];
  /** Config keys evaluated inside the container's own scope (may use <loop.*>, children). */
  innerFields?: readonly string[];
  /** Config keys holding JavaScript (an async function body); syntax-checked when saved. */
  codeFields?: readonly string[];
  /**
   * Top-level fields of the output when the config fixes them (null: any field may appear).
   * References to other fields of this block are reported when the definition is saved.
   */
  outputFields?(config: C): readonly string[] | null;
  /** Config keys holding credentials (tokens, signing secrets): masked in the trace. */
  maskedFields?: readonly string[];
  /** Retries allowed (default true). */
  retryable?: boolean;
  /** A completed block of this type ends the run; its output is `{data, status, headers}`. */
  endsRun?: boolean;
  /** Only one per definition, at the top level, and the entry point of the run. */
  entry?: boolean;
  /**
   * Its output is a function of its resolved config and the run's input alone (no I/O, clock, randomness or
   * code): a replay recomputes it, so its step record need not be durable before its dependants start.
   */
  pure?: boolean;
  run(ctx: BlockContext, config: C): Promise<BlockResult>;
}

/** Registry entry type (config type erased). */
export type AnyBlockType = BlockType<never>;

/** Declares a block type with its config type checked, erasing it for the registry. */
export function defineBlockType<C>(def: BlockType<C>): AnyBlockType {
  return def as unknown as AnyBlockType;
}

/** Error raised by a container when one of its children failed: keeps the child's identity. */
export class ChildBlockError extends Error {
  constructor(
    message: string,
    readonly blockId: string,
    readonly blockName: string,
    readonly innerMessage: string,
  ) {
    super(message);
    this.name = 'ChildBlockError';
  }
}

/** Raised when the run stops (failure elsewhere, Response block, cancellation) mid-block. */
export class RunStoppedError extends Error {
  constructor() {
    super('Run stopped');
    this.name = 'RunStoppedError';
  }
}
