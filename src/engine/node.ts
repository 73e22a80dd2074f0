// Executing one node of a scope: a replayed step, a leaf block (with its retries) or a container
// (loop, parallel) running its children as nested scopes. Leaf and container end in the same
// `finishNode`: output cap, the run's held outputs, trace entry, error routing, pause points, step record.
import {
  ChildBlockError,
  RunStoppedError,
  type BlockContext,
  type BlockResult,
  type ContainerControl,
} from './block-type.js';
import type { CompiledBlock } from './compile.js';
import type { ChildRunResult, SandboxLogEntry } from './ports.js';
import { BlockLimitError, type RunState } from './run-state.js';
import type { BlockSlot } from './run-tree.js';
import { findUp, type HaltFlag, type NodeResult, type ScopeInfo, type ScopeRun } from './scope.js';
import { errorLogs, errorMessage, isoTime, summarizeInput } from './trace.js';
import type { PausePoint, StepRecord } from './types.js';

/**
 * Pause points one run may hold without `maxPausePoints`: each is a form a person answers, and the pause
 * record is rewritten whole as they are resumed or time out (docs/architecture.md, Pause lifecycle).
 */
export const DEFAULT_MAX_PAUSE_POINTS = 100;

/** What one execution of a block (all its attempts) produced, handed to finishNode. */
interface Execution {
  startedAt: number;
  config: Record<string, unknown> | undefined;
  result: BlockResult | undefined;
  error: unknown;
  logs: SandboxLogEntry[];
  /** Console lines the trace did not keep (see TraceLog.keepLogs). */
  logsDropped: number;
  attempts: number;
  /** The block (or a child of the container) changed run variables. */
  variablesChanged: boolean;
  /** The block ran a child run (ctx.runChild): its failure may be its tree's limit (see finishNode). */
  ranChild: boolean;
}

function blockFailure(b: CompiledBlock, error: unknown): ChildBlockError {
  if (error instanceof ChildBlockError) return error;
  const message = errorMessage(error);
  const full = error instanceof BlockLimitError ? message : `Block "${b.name}" failed: ${message}`;
  return new ChildBlockError(full, b.id, b.name, message);
}

export async function executeNode(scope: ScopeRun, b: CompiledBlock): Promise<NodeResult> {
  const run = scope.run;
  const key = b.id + scope.suffix;

  const overBudget = run.takeStep(b.id, b.name);
  if (overBudget !== null) return { kind: 'failed', error: blockFailure(b, overBudget) };
  if (run.shouldYield()) {
    await run.pause();
    if (scope.isHalted()) return { kind: 'stopped' };
  }

  const rec = run.opts.recorded?.get(key);
  if (rec !== undefined) return replay(scope, b, key, rec);

  if (b.type.container) return runContainer(scope, b, key, b.type.container);

  const slot = run.tree.slot();
  const wait = slot.acquire();
  if (wait !== null) await wait;
  try {
    if (scope.isHalted()) return { kind: 'stopped' };
    return await runLeaf(scope, b, key, slot);
  } finally {
    slot.close();
  }
}

function replay(scope: ScopeRun, b: CompiledBlock, key: string, rec: StepRecord): NodeResult {
  const run = scope.run;
  // Recorded within the bound when the step ran: restored as they were.
  if (rec.variables) run.restoreVariables(rec.variables);
  // A replayed output is held like a computed one (a resumed run keeps to the same bound).
  if (rec.error === undefined) {
    const overHeld = run.holdOutput(b.id, b.name, run.measureOutput(b.name, rec.output).bytes, scope.parent === null);
    if (overHeld !== null) return { kind: 'failed', error: blockFailure(b, overHeld) };
  }
  run.addTrace({
    key, blockId: b.id, name: b.name, type: b.typeName, status: 'replayed',
    startedAt: isoTime(run.clock.now()), durationMs: 0, output: rec.output,
    ...(rec.error !== undefined ? { error: rec.error } : {}),
  });
  if (rec.error !== undefined) {
    if (b.hasErrorEdge) return { kind: 'routed', message: rec.error };
    return { kind: 'failed', error: blockFailure(b, new Error(rec.error)) };
  }
  if (b.type.endsRun) run.respond(rec.output);
  return { kind: 'success', output: rec.output };
}

function makeContext(scope: ScopeRun, b: CompiledBlock, key: string, exec: Execution, slot: BlockSlot | null, container?: ContainerControl): BlockContext {
  const run = scope.run;
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
      run.setVariables(values, b.name);
      exec.variablesChanged = true;
    },
    secret: async (name) => {
      await run.loadSecrets([name]);
      const value = run.secret(name);
      if (value === undefined) throw new Error(`secret ${name} is not available in this run`);
      return value;
    },
    resolve: (value) => scope.resolveLoose(value),
    runCode: (source, opts) => scope.runCode(source, opts),
    runChild: (workflowId, input) => runChild(run, exec, slot, workflowId, input),
    log: (level, message) => keepLogs(scope, exec, [{ level, message }]),
    container,
  };
}

/** A child run in the run's tree, the block's slot lent to the tree meanwhile (see BlockSlot). */
async function runChild(run: RunState, exec: Execution, slot: BlockSlot | null, workflowId: string, input: Record<string, unknown>): Promise<ChildRunResult> {
  const port = run.opts.ports.workflows;
  if (!port) throw new Error('child workflows are not available in this context');
  exec.ranChild = true;
  slot?.lend();
  try {
    return await port.run(workflowId, input, { depth: run.depth + 1, signal: run.signal, tree: run.tree });
  } finally {
    await slot?.takeBack();
  }
}

/** A block's console lines, as far as the trace keeps them. */
function keepLogs(scope: ScopeRun, exec: Execution, logs: Iterable<SandboxLogEntry>): void {
  exec.logsDropped += scope.run.trace.keepLogs(exec.logs, logs);
}

function newExecution(scope: ScopeRun): Execution {
  return {
    startedAt: scope.run.clock.now(),
    config: undefined,
    result: undefined,
    error: undefined,
    logs: [],
    logsDropped: 0,
    attempts: 0,
    variablesChanged: false,
    ranChild: false,
  };
}

/** A leaf block: its attempts (retry with backoff when configured), then finishNode. */
async function runLeaf(scope: ScopeRun, b: CompiledBlock, key: string, slot: BlockSlot): Promise<NodeResult> {
  const run = scope.run;
  const exec = newExecution(scope);
  const maxAttempts = b.type.retryable === false ? 1 : b.retry?.maxAttempts ?? 1;
  try {
    if (b.secretNames.length > 0) await run.loadSecrets(b.secretNames);
    exec.config = scope.resolveConfig(b);
    const ctx = makeContext(scope, b, key, exec, slot);
    for (;;) {
      exec.attempts++;
      try {
        exec.result = await b.type.run(ctx, exec.config as never);
        exec.error = undefined;
        break;
      } catch (err) {
        exec.error = err;
        const logs = errorLogs(err);
        if (logs) keepLogs(scope, exec, logs);
        if (exec.attempts >= maxAttempts || run.signal.aborted || err instanceof RunStoppedError) break;
        const backoff = (b.retry?.backoffMs ?? 0) * 2 ** (exec.attempts - 1);
        if (backoff > 0) {
          try {
            await run.clock.sleep(Math.min(backoff, run.remainingMs()), run.signal);
          } catch {
            break;
          }
        }
        if (scope.isHalted()) break;
        // A retry is one more block execution.
        const overBudget = run.takeStep(b.id, b.name);
        if (overBudget !== null) {
          exec.error = overBudget;
          break;
        }
      }
    }
  } catch (err) {
    exec.error = err;
  }
  return finishNode(scope, b, key, exec);
}

/** A loop or parallel: the block runs its children through a ContainerControl, then finishNode. */
async function runContainer(scope: ScopeRun, b: CompiledBlock, key: string, kind: 'loop' | 'parallel'): Promise<NodeResult> {
  const run = scope.run;
  if (scope.isHalted()) return { kind: 'stopped' };
  const exec = newExecution(scope);
  exec.attempts = 1;
  const versionBefore = run.variablesVersion;
  const halt: HaltFlag = { halted: false };
  // Containers collect every completed child scope's output: counted here as each arrives, so one that
  // passes the block output cap fails at once (stopping its other iterations or branches) rather than
  // after it has held them all.
  const collected = run.collector(b.name);
  const control: ContainerControl = {
    kind,
    runScope: async (frame) => {
      const outcome = await scope.child(b, kind, frame, halt).execute();
      if (outcome.status === 'failed') halt.halted = true;
      if (outcome.status !== 'completed') return outcome;
      const tooLarge = collected.add(outcome.output);
      if (tooLarge === null) return outcome;
      halt.halted = true;
      return { status: 'failed', error: tooLarge };
    },
    evaluate: async (source, frame, previous) => {
      const outputs = previous !== null && 'outputs' in previous && previous.outputs instanceof Map ? previous.outputs : new Map<string, unknown>();
      const view = scope.child(b, kind, frame, halt, outputs);
      const timeoutMs = Math.max(1, Math.min(5000, run.remainingMs()));
      const res = await view.runCode(source, { timeoutMs });
      keepLogs(scope, exec, res.logs);
      return res.value;
    },
    stopped: () => halt.halted || scope.isHalted(),
  };
  try {
    if (b.secretNames.length > 0) await run.loadSecrets(b.secretNames);
    exec.config = scope.resolveConfig(b);
    exec.result = await b.type.run(makeContext(scope, b, key, exec, null, control), exec.config as never);
  } catch (err) {
    exec.error = err;
  }
  if (run.variablesVersion !== versionBefore) exec.variablesChanged = true;
  return finishNode(scope, b, key, exec);
}

/** The config with credential fields (the type's `maskedFields`) replaced for the trace. */
function masked(config: Record<string, unknown>, fields: readonly string[] | undefined): Record<string, unknown> {
  if (!fields || !fields.some((f) => config[f] !== undefined)) return config;
  const out = { ...config };
  for (const f of fields) if (out[f] !== undefined) out[f] = '[masked]';
  return out;
}

/** The one tail of every executed block: trace entry, error routing, pause, output cap, record. */
async function finishNode(scope: ScopeRun, b: CompiledBlock, key: string, exec: Execution): Promise<NodeResult> {
  const run = scope.run;
  if (run.finished || (run.stopping && run.stopReason !== 'failed')) return { kind: 'stopped' };
  if (exec.error instanceof RunStoppedError) return { kind: 'stopped' };

  let { result, error } = exec;
  if (error !== undefined && exec.ranChild && !(error instanceof BlockLimitError)) error = run.treeLimit(b.id, b.name) ?? error;
  let output: unknown = null;
  let outputBytes = 0;
  if (error === undefined && result !== undefined && !('pause' in result)) {
    output = result.output === undefined ? null : result.output;
    if (result.logs) keepLogs(scope, exec, result.logs);
    const size = run.measureOutput(b.name, output);
    outputBytes = size.bytes;
    // The run's bound comes second: an output over the block cap fails only its block (an error edge may
    // catch it) and is not held.
    const tooLarge = size.error ?? run.holdOutput(b.id, b.name, size.bytes, scope.parent === null);
    if (tooLarge !== null) {
      error = tooLarge;
      result = undefined;
    }
  } else if (error === undefined && result !== undefined && 'pause' in result && result.pause !== null) {
    // A pause's response is kept until the run ends and then answered and stored with the pause: bounded like
    // an output (docs/architecture.md, Where limits are enforced). 130 of 1.9 MB each made a 243 MB answer.
    const tooMany = pauseLimit(run, b);
    const size = tooMany === null ? run.measureOutput(b.name, result.pause.response) : null;
    // Past the block output cap only the block fails; every pause point is kept, so it is always held.
    const refused = tooMany ?? size?.error ?? run.holdOutput(b.id, b.name, size?.bytes ?? 0, true);
    if (refused !== null) {
      error = refused;
      result = undefined;
    }
  }

  const base = {
    key, blockId: b.id, name: b.name, type: b.typeName,
    startedAt: isoTime(exec.startedAt), durationMs: run.clock.now() - exec.startedAt,
    ...(exec.config !== undefined ? { input: summarizeInput(masked(exec.config, b.type.maskedFields), run.mask) } : {}),
    ...(exec.logs.length ? { logs: exec.logs } : {}),
    ...(exec.logsDropped > 0 ? { logsDropped: exec.logsDropped } : {}),
    ...(exec.attempts > 1 ? { attempts: exec.attempts } : {}),
  };

  if (error !== undefined || result === undefined) {
    const failure = blockFailure(b, error);
    const message = error instanceof ChildBlockError ? error.message : errorMessage(error);
    run.addTrace({ ...base, status: 'error', error: message });
    if (b.hasErrorEdge && !run.stopping) {
      const recorded = await record(scope, b, { key, blockId: b.id, output: { error: message }, error: message });
      return recorded ?? { kind: 'routed', message };
    }
    return { kind: 'failed', error: failure };
  }

  if ('pause' in result) {
    run.addTrace({ ...base, status: 'paused' });
    if (result.pause !== null) run.pausePoints.push(pausePoint(scope, b, key, result.pause.response));
    return { kind: 'paused' };
  }

  run.addTrace({ ...base, status: 'success', output }, outputBytes);
  const step: StepRecord = { key, blockId: b.id, output };
  if (exec.variablesChanged) step.variables = { ...run.variables };
  const recorded = await record(scope, b, step);
  if (recorded !== null) return recorded;
  if (b.type.endsRun) run.respond(output);
  return { kind: 'success', output };
}

/**
 * The pause point limit, checked where pause points are collected: the block that would pass it fails the run
 * (no error edge catches it, as with the step budget). Null while the run has room.
 */
function pauseLimit(run: RunState, b: CompiledBlock): BlockLimitError | null {
  const max = run.opts.maxPausePoints ?? DEFAULT_MAX_PAUSE_POINTS;
  if (run.pausePoints.length < max) return null;
  const message = `Pause point limit exceeded: the run would hold more than ${max} pause points (maxPausePoints); stopped at block "${b.name}"`;
  run.fail({ message, blockId: b.id, blockName: b.name });
  return new BlockLimitError(message);
}

/** Awaits onStep with the step's secret values masked; a failure to record fails the block. Returns null when recorded. */
async function record(scope: ScopeRun, b: CompiledBlock, step: StepRecord): Promise<NodeResult | null> {
  const onStep = scope.run.opts.onStep;
  if (!onStep) return null;
  try {
    await onStep(scope.run.mask.value(step), {
      recomputable: b.type.pure === true && step.variables === undefined,
      endsRun: step.error === undefined && (b.type.endsRun === true || scope.isLastBlock(b)),
    });
    return null;
  } catch (err) {
    return { kind: 'failed', error: blockFailure(b, new Error(`could not record the step: ${errorMessage(err)}`)) };
  }
}

function pausePoint(scope: ScopeRun, b: CompiledBlock, key: string, response: unknown): PausePoint {
  let contextId = b.id;
  const frames: ScopeInfo[] = [];
  findUp(scope, (s) => {
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
