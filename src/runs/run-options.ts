import type { Config } from '../config.js';
import type { RunResult } from '../engine/index.js';
import { describedSize } from '../engine/json-size.js';
import type { PlanLimits } from '../limits/plans.js';
import type { FinishedExecution } from './store.js';

/** Limits every run gets from the configuration and its plan (step budget, output and trace caps, timeout). */
export function runLimits(config: Config, plan: PlanLimits, mode: 'sync' | 'async') {
  return {
    timeoutMs: (mode === 'sync' ? plan.syncTimeoutSeconds : plan.asyncTimeoutSeconds) * 1000,
    maxSteps: config.maxRunSteps,
    maxBlockOutputBytes: config.maxBlockOutputBytes,
    maxTraceEntries: config.maxTraceEntries,
    maxTraceOutputBytes: config.maxTraceOutputBytes,
    maxTraceLogChars: config.maxTraceLogChars,
  };
}

/** The answer a finished run gives: the Response block's data, else the run's output. */
export const runOutput = (result: RunResult): unknown => (result.response ? result.response.data : result.output);

/**
 * Caps what a run stores and returns: over `maxBytes` of JSON, or not JSON at all (it could not be stored),
 * the run fails with an error naming the limit, and neither the output nor the trace entries' outputs are kept.
 */
export function capResult(result: RunResult, maxBytes: number): RunResult {
  const value = result.response ?? result.output;
  // Measured without building the JSON: a result longer than V8's longest string is still measured (its
  // stringify threw, and the error used to give Number.MAX_SAFE_INTEGER as its size).
  const size = value === undefined || value === null ? null : describedSize(value, maxBytes);
  if (size === null || (size.json && size.bytes <= maxBytes)) return result;
  const message = size.bytes > maxBytes
    ? `The run's result is ${size.text}, over the limit of ${maxBytes} bytes (WEFT_MAX_RUN_RESULT_BYTES)`
    : "The run's result cannot be stored: it is not JSON (a cycle or a BigInt)";
  return {
    ...result,
    status: 'failed',
    output: null,
    response: undefined,
    error: { message },
    trace: result.trace.map((t) => ({ ...t, output: undefined })),
  };
}

export function finishedFrom(result: RunResult): FinishedExecution {
  const status = result.status === 'completed' ? 'completed'
    : result.status === 'paused' ? 'paused'
    : result.status === 'cancelled' ? 'cancelled' : 'failed';
  return {
    status,
    output: result.response ?? result.output ?? null,
    error: result.error?.message ?? (result.status === 'timed_out' ? 'Execution timed out' : null),
    errorBlock: result.error?.blockId ?? null,
    trace: result.trace,
    startedAt: new Date(result.startedAt),
    endedAt: new Date(result.endedAt),
    durationMs: result.durationMs,
  };
}
