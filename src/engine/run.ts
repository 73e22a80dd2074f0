// Running a compiled workflow: builds the run state, runs the top-level scope (scope.ts schedules
// blocks, node.ts executes them) until it finishes or the run is stopped, and shapes the result.
// Durable replay: a block whose step key is in `recorded` is not run again.
import { ChildBlockError, type ScopeOutcome } from './block-type.js';
import type { CompiledGraph } from './compile.js';
import { executeNode } from './node.js';
import { RunState, type Failure } from './run-state.js';
import { ScopeRun } from './scope.js';
import { isoTime } from './trace.js';
import type { RunOptions, RunResult } from './types.js';

export async function runWorkflow(compiled: CompiledGraph, opts: RunOptions): Promise<RunResult> {
  const ended = await runToEnd(compiled, opts);
  const result = shape(ended.state, ended.outcome, ended.endedAt, ended.trace, ended.pausePoints);
  // Everything the run reports leaves through here: every secret value it resolved is masked. The
  // result can hold megabytes of outputs, so masking lets the event loop run as the run loop does.
  return ended.state.mask.valueYielding(result, ended.state.clock);
}

async function runToEnd(compiled: CompiledGraph, opts: RunOptions) {
  const entry = opts.entry ?? recordedEntry(compiled, opts);
  const graph = entry !== undefined ? compiled.forEntry(entry) : compiled;
  const run = new RunState(graph, opts);
  let outcome: ScopeOutcome | null = null;
  if (!run.stopping) {
    const root = new ScopeRun(run, graph.root, null, null, null, executeNode);
    outcome = await Promise.race([root.execute(), run.stopped.then(() => null)]);
  }
  const endedAt = run.clock.now();
  const trace = run.trace.close();
  const pausePoints = run.pausePoints.slice();
  run.dispose();
  return { state: run, outcome, endedAt, trace, pausePoints };
}

function shape(
  run: RunState, outcome: ScopeOutcome | null, endedAt: number, trace: ReturnType<RunState['trace']['close']>, pausePoints: RunResult['pausePoints'],
): RunResult {
  const base = {
    trace: trace.entries,
    ...(trace.dropped > 0 ? { traceTruncated: trace.dropped } : {}),
    steps: run.steps,
    variables: { ...run.variables },
    startedAt: isoTime(run.startedAt),
    endedAt: isoTime(endedAt),
    durationMs: Math.max(0, endedAt - run.startedAt),
  };
  if (run.stopReason === 'cancelled' || run.stopReason === 'timed_out') {
    return { ...base, status: run.stopReason, output: null, error: { message: run.failure?.message ?? 'Run stopped' } };
  }
  if (run.stopReason === 'response') {
    return { ...base, status: 'completed', output: run.responseOutput, response: run.response };
  }
  if (run.stopReason === 'failed' || outcome?.status === 'failed') {
    const f = run.failure ?? failureOf(outcome);
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

/**
 * A run picked up again (resumed after a pause, replayed) without its entry named: the entry block
 * whose step is recorded, when it is not the default one.
 */
function recordedEntry(graph: CompiledGraph, opts: RunOptions): string | undefined {
  if (!opts.recorded || opts.recorded.size === 0) return undefined;
  const ids = new Set([...opts.recorded.values()].map((s) => s.blockId));
  for (const [type, id] of graph.entryIds) if (id !== graph.startId && ids.has(id)) return type;
  return undefined;
}

function failureOf(outcome: ScopeOutcome | null): Failure {
  if (outcome?.status !== 'failed') return { message: 'Run failed' };
  const e = outcome.error;
  return e instanceof ChildBlockError ? { message: e.message, blockId: e.blockId, blockName: e.blockName } : { message: e.message };
}
