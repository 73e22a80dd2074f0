import type { Config } from '../config.js';
import type { RunResult } from '../engine/index.js';
import type { PlanLimits } from '../limits/plans.js';
import type { FinishedExecution } from './store.js';

/** Limits every run gets from the configuration and its plan (step budget, output and trace caps, timeout). */
export function runLimits(config: Config, plan: PlanLimits, mode: 'sync' | 'async') {
  return {
    timeoutMs: (mode === 'sync' ? plan.syncTimeoutSeconds : plan.asyncTimeoutSeconds) * 1000,
    maxSteps: config.maxRunSteps,
    maxBlockOutputBytes: config.maxBlockOutputBytes,
    maxTraceEntries: config.maxTraceEntries,
  };
}

/** The answer a finished run gives: the Response block's data, else the run's output. */
export const runOutput = (result: RunResult): unknown => (result.response ? result.response.data : result.output);

/**
 * Caps what a run stores and returns: over `maxBytes` of JSON, the run fails with an error naming the
 * limit, and neither the output nor the oversized trace entries are kept.
 */
export function capResult(result: RunResult, maxBytes: number): RunResult {
  const size = jsonSize(result.response ?? result.output);
  if (size <= maxBytes) return result;
  return {
    ...result,
    status: 'failed',
    output: null,
    response: undefined,
    error: { message: `The run's result is ${size} bytes, over the limit of ${maxBytes} bytes (WEFT_MAX_RUN_RESULT_BYTES)` },
    trace: result.trace.map((t) => ({ ...t, output: undefined })),
  };
}

function jsonSize(value: unknown): number {
  if (value === undefined || value === null) return 0;
  try {
    return Buffer.byteLength(JSON.stringify(value) ?? '', 'utf8');
  } catch {
    return Number.MAX_SAFE_INTEGER;
  }
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
