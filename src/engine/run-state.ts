// State of one run shared by all its scopes: options with their defaults, variables, how and why the run
// stops, pause points and the trace. The step budget, held outputs, concurrency and event-loop pacing
// belong to the run's tree (RunTree), which its child runs (workflow blocks) join.
import type { BlockContext } from './block-type.js';
import type { CompiledGraph } from './compile.js';
import type { ClockPort } from './ports.js';
import { NO_SECRETS, SecretMask } from './secret-mask.js';
import { describedSize, measureJson, unstorableReason } from './json-size.js';
import { RunTree } from './run-tree.js';
import { TraceLog } from './trace.js';
import type { BlockTrace, PausePoint, RunOptions, RunResult } from './types.js';

/**
 * Without `maxRunOutputBytes`, a run may hold this many block outputs at the block output cap: room for a
 * few big outputs (one, the loop that collected it, the response that passes it on) but not for a trace of
 * thousands of them.
 */
const HELD_OUTPUT_BLOCK_CAPS = 16;

export const RUN_DEFAULTS = {
  maxConcurrency: 32,
  loopCap: 1000,
  parallelFanOut: 20,
  maxParallelBranches: 1000,
  maxSteps: 100_000,
  maxTraceEntries: 2_000,
  maxBlockOutputBytes: 4 * 1024 * 1024,
  /** 16 times the default block output cap (64 MiB); a run given another block cap gets 16 times that. */
  maxRunOutputBytes: HELD_OUTPUT_BLOCK_CAPS * 4 * 1024 * 1024,
  maxTraceOutputBytes: 4 * 1024 * 1024,
  maxTraceLogChars: 1024 * 1024,
} as const;

export interface Failure {
  message: string;
  blockId?: string;
  blockName?: string;
}

/** A block error whose message already names the block (limits): not prefixed again. */
const timedOut = (ms: number) => `Run timed out after ${ms} ms`;

export class BlockLimitError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'BlockLimitError';
  }
}

/**
 * The reason a run's signal carries once the run ended normally, built without a stack trace: only its message
 * is read, and capturing a stack on every run's end was measurable on a sync request's main thread. A fresh
 * object per run, so that nothing one run's code does to it reaches another run.
 */
function runFinished(): Error {
  const limit = Error.stackTraceLimit;
  Error.stackTraceLimit = 0;
  try {
    return new Error('Run finished');
  } finally {
    Error.stackTraceLimit = limit;
  }
}

export class RunState {
  readonly clock: ClockPort;
  readonly controller: AbortController;
  readonly trace: TraceLog;
  readonly pausePoints: PausePoint[] = [];
  readonly variables: Record<string, unknown>;
  variablesVersion = 0;
  /** Shared with the run's parent and child runs: step budget, held outputs, concurrency, pacing. */
  readonly tree: RunTree;
  /** The run started a tree of its own (not a child run). */
  private readonly ownsTree: boolean;
  readonly limits: BlockContext['limits'];
  readonly maxBlockOutputBytes: number;
  /** JSON bytes of the block outputs this run holds until it ends (counted in its tree's bound too). */
  private heldOutputBytes = 0;
  /** Entries offered to the trace; past maxTraceEntries it keeps none, so their outputs are not held. */
  private traceEntries = 0;
  private readonly maxTraceEntries: number;
  /** The run hands its steps to `onStep`, which keeps their outputs (see holdOutput). */
  private readonly recordsSteps: boolean;
  /** Secret values this run has resolved so far (given up front, or fetched through the secrets port). */
  private readonly secretValues = new Map<string, string>();
  secretNames: ReadonlySet<string> = new Set();
  /** The resolved names, sorted and joined: the code-binding cache's key. */
  secretsKey = '';
  /** Masks every value resolved so far; applied to everything the run reports. */
  mask: SecretMask = NO_SECRETS;
  readonly depth: number;
  readonly deadline: number;
  readonly startedAt: number;

  /** Block executions of this run so far (its tree's count is the step budget's). */
  steps = 0;

  stopping = false;
  finished = false;
  stopReason: 'failed' | 'response' | 'cancelled' | 'timed_out' | null = null;
  failure: Failure | null = null;
  response: RunResult['response'];
  responseOutput: unknown;

  private stopResolve: () => void = () => undefined;
  /** Resolves when the run must return without waiting (response, cancellation, timeout). */
  readonly stopped: Promise<void> = new Promise<void>((resolve) => {
    this.stopResolve = resolve;
  });
  private timer: ReturnType<typeof setTimeout> | undefined;
  private readonly onExternalAbort = () => this.cancel('cancelled', 'Run cancelled');

  constructor(readonly graph: CompiledGraph, readonly opts: RunOptions) {
    this.controller = opts.newController?.() ?? new AbortController();
    this.clock = opts.ports.clock;
    this.startedAt = this.clock.now();
    this.variables = { ...(graph.definition.variables ?? {}), ...(opts.variables ?? {}) };
    this.limits = {
      loopCap: opts.loopCap ?? RUN_DEFAULTS.loopCap,
      parallelFanOut: Math.max(1, opts.parallelFanOut ?? RUN_DEFAULTS.parallelFanOut),
      maxParallelBranches: opts.maxParallelBranches ?? RUN_DEFAULTS.maxParallelBranches,
    };
    this.maxBlockOutputBytes = opts.maxBlockOutputBytes ?? RUN_DEFAULTS.maxBlockOutputBytes;
    // A child run keeps to its tree's limits, whatever its own options say.
    this.ownsTree = opts.tree === undefined;
    this.tree = opts.tree ?? new RunTree(this.clock, {
      maxSteps: opts.maxSteps ?? RUN_DEFAULTS.maxSteps,
      maxRunOutputBytes: opts.maxRunOutputBytes ?? HELD_OUTPUT_BLOCK_CAPS * this.maxBlockOutputBytes,
      maxConcurrency: opts.maxConcurrency ?? RUN_DEFAULTS.maxConcurrency,
    });
    this.maxTraceEntries = Math.max(0, opts.maxTraceEntries ?? RUN_DEFAULTS.maxTraceEntries);
    this.recordsSteps = opts.onStep !== undefined;
    this.trace = new TraceLog(this.maxTraceEntries, {
      logChars: Math.max(0, opts.maxTraceLogChars ?? RUN_DEFAULTS.maxTraceLogChars),
      outputBytes: Math.max(0, opts.maxTraceOutputBytes ?? RUN_DEFAULTS.maxTraceOutputBytes),
    });
    if (opts.secrets) this.addSecrets(opts.secrets);
    this.depth = opts.depth ?? 0;
    this.deadline = opts.timeoutMs !== undefined ? this.startedAt + opts.timeoutMs : Infinity;

    if (opts.signal) {
      if (opts.signal.aborted) this.cancel('cancelled', 'Run cancelled');
      else opts.signal.addEventListener('abort', this.onExternalAbort, { once: true });
    }
    if (opts.timeoutMs !== undefined && !this.stopping) {
      const ms = opts.timeoutMs;
      this.timer = setTimeout(() => this.cancel('timed_out', timedOut(ms)), Math.max(0, ms));
    }
  }

  get signal(): AbortSignal {
    return this.controller.signal;
  }

  remainingMs(): number {
    return this.deadline === Infinity ? Infinity : Math.max(0, this.deadline - this.clock.now());
  }

  secret(name: string): string | undefined {
    return this.secretValues.get(name);
  }

  /**
   * Fetches the named secrets this run has not resolved yet through the secrets port, right before the
   * block that references them runs. Rejects (failing that block) when one is not set.
   */
  async loadSecrets(names: readonly string[]): Promise<void> {
    const port = this.opts.ports.secrets;
    if (!port) return;
    const wanted = names.filter((n) => !this.secretValues.has(n));
    if (wanted.length === 0) return;
    this.addSecrets(await port.resolve(wanted));
  }

  private addSecrets(values: Record<string, string>): void {
    for (const [name, value] of Object.entries(values)) this.secretValues.set(name, value);
    const names = [...this.secretValues.keys()].sort();
    this.secretNames = new Set(names);
    this.secretsKey = names.join(',');
    this.mask = new SecretMask(this.secretValues.values());
  }

  /**
   * Assigns run variables, all of them together at most the block output cap of JSON: past it the block fails
   * and the variables stay as they were (assigned before the block's output is measured, a variable doubled
   * through an error edge reached 268 million characters).
   */
  setVariables(values: Record<string, unknown>, blockName: string): void {
    const next = { ...this.variables, ...values };
    const size = describedSize(next, this.maxBlockOutputBytes);
    if (size.bytes > this.maxBlockOutputBytes) {
      throw new BlockLimitError(`Block "${blockName}" would make the run's variables ${size.text}, over the limit of ${this.maxBlockOutputBytes} bytes (maxBlockOutputBytes)`);
    }
    if (size.unstorable) throw new BlockLimitError(`Block "${blockName}" would make the run's variables unstorable: ${unstorableReason(size.unstorable)}`);
    this.restoreVariables(values);
  }

  /** Assigns variables a recorded step held (a replay): they were within the bound when it ran. */
  restoreVariables(values: Record<string, unknown>): void {
    Object.assign(this.variables, values);
    this.variablesVersion++;
  }

  // -- step budget and pacing -------------------------------------------------------------------

  /**
   * Counts one block execution (a block, a container, a retry attempt or a replayed step) against the tree's
   * budget. When it is spent (or the tree failed on a limit) the run fails and the error is returned; null
   * otherwise.
   */
  takeStep(blockId: string, blockName: string): BlockLimitError | null {
    const message = this.tree.takeStep(blockName);
    if (message !== null) return this.failOnLimit(message, blockId, blockName);
    this.steps++;
    return null;
  }

  /**
   * The tree's limit error for a block that ran child runs and failed after one of them passed a limit of the
   * tree: its run fails too, with the same message (not "child workflow failed: ..."), and no error edge
   * catches it. Null when the tree has passed none.
   */
  treeLimit(blockId: string, blockName: string): BlockLimitError | null {
    const message = this.tree.failure;
    return message === null ? null : this.failOnLimit(message, blockId, blockName);
  }

  private failOnLimit(message: string, blockId: string, blockName: string): BlockLimitError {
    this.fail({ message, blockId, blockName });
    return new BlockLimitError(message);
  }

  /** True when the tree has kept the event loop long enough; then the step awaits `pause()`. */
  shouldYield(): boolean {
    return this.tree.shouldYield();
  }

  pause(): Promise<void> {
    return this.tree.pause();
  }

  // -- output sizes ----------------------------------------------------------------------------

  /**
   * A block's output measured against the block output cap: its JSON size (exact up to a multiple of the
   * cap) and the error when it is over, or when the databases could not store it (a NUL character, an
   * unpaired surrogate, nesting past MAX_JSON_DEPTH: a run's writes would fail after it had done its work). A
   * value that is not JSON (a port's value) is measured as far as it goes; the stored result is checked where
   * it is written.
   */
  measureOutput(blockName: string, output: unknown): { bytes: number; error: BlockLimitError | null } {
    const limit = this.maxBlockOutputBytes;
    const size = describedSize(output, limit);
    if (size.bytes > limit) return { bytes: size.bytes, error: outputTooLarge(blockName, size.text, limit) };
    if (size.unstorable) return { bytes: size.bytes, error: new BlockLimitError(`Block "${blockName}" output cannot be stored: ${unstorableReason(size.unstorable)}`) };
    return { bytes: size.bytes, error: null };
  }

  /** A running count of the results one container collects (see CollectedOutputs). */
  collector(blockName: string): CollectedOutputs {
    return new CollectedOutputs(blockName, this.maxBlockOutputBytes);
  }

  /**
   * Counts a finished block's output among those the run holds until it ends when it will be kept: the
   * trace keeps it (it has room) or it is an output of the top level. Past maxRunOutputBytes the run fails
   * (no error edge catches it: the outputs are held all the same) and the error is returned; null otherwise.
   */
  holdOutput(blockId: string, blockName: string, bytes: number, topLevel: boolean): BlockLimitError | null {
    // Step records keep every output (in memory for a sync run until it ends, in the database for an async
    // one): then each counts, also once the trace keeps no more entries.
    if (!topLevel && !this.recordsSteps && this.traceEntries >= this.maxTraceEntries) return null;
    const message = this.tree.hold(bytes, blockName);
    if (message !== null) return this.failOnLimit(message, blockId, blockName);
    this.heldOutputBytes += bytes;
    return null;
  }

  /** Every trace entry goes through here, so that holdOutput knows whether the trace still keeps entries. */
  addTrace(entry: BlockTrace, outputBytes?: number): void {
    this.traceEntries++;
    this.trace.add(entry, outputBytes);
  }

  // -- stopping ---------------------------------------------------------------------------------

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
    // A block whose time the run's capped (a function's sandbox call gets what remains of it) can fail a moment
    // before the run's timer fires: past the deadline it is the run that timed out, whatever the block said.
    if (this.clock.now() >= this.deadline) {
      this.cancel('timed_out', timedOut(this.deadline - this.startedAt));
      return;
    }
    this.stopping = true;
    this.stopReason = 'failed';
    this.failure = failure;
  }

  respond(output: unknown): void {
    if (this.stopping) return;
    this.stopping = true;
    this.stopReason = 'response';
    const o = isRecord(output) ? output : {};
    const headers: Record<string, string> = {};
    if (isRecord(o.headers)) for (const [k, v] of Object.entries(o.headers)) headers[k] = typeof v === 'string' ? v : String(v);
    this.response = { data: o.data === undefined ? null : o.data, status: typeof o.status === 'number' ? o.status : 200, headers };
    this.responseOutput = output;
    this.controller.abort(new Error('Run ended by a Response block'));
    this.stopResolve();
  }

  dispose(): void {
    this.finished = true;
    if (!this.ownsTree) this.tree.letGo(this.heldOutputBytes);
    this.heldOutputBytes = 0;
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.opts.signal?.removeEventListener('abort', this.onExternalAbort);
    if (!this.controller.signal.aborted) this.controller.abort(runFinished());
  }
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === 'object';
}

function outputTooLarge(blockName: string, size: string, limit: number): BlockLimitError {
  return new BlockLimitError(`Block "${blockName}" output is ${size}, over the limit of ${limit} bytes (maxBlockOutputBytes)`);
}

/**
 * The results a container (loop, parallel) collects from its iterations or branches, counted as each one
 * arrives: the container fails as soon as they pass the block output cap, instead of holding all of them
 * until its own output is checked. Each result is measured once, and never past the cap.
 */
export class CollectedOutputs {
  /** JSON bytes of the results so far as an array: brackets, commas and each result. */
  private bytes = 2;
  private count = 0;

  constructor(private readonly blockName: string, private readonly limit: number) {}

  /** Adds one result: the error once the results are over the cap, null otherwise. */
  add(output: unknown): BlockLimitError | null {
    const size = measureJson(output === undefined ? null : output, this.limit);
    this.bytes += size.bytes + (this.count > 0 ? 1 : 0);
    this.count++;
    if (this.bytes <= this.limit) return null;
    // A result measured only up to the cap gives no exact total.
    const text = size.bytes > this.limit ? `more than ${this.limit} bytes` : `${this.bytes} bytes`;
    return outputTooLarge(this.blockName, text, this.limit);
  }
}
