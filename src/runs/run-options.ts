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
    maxPausePoints: config.maxPausePoints,
  };
}

/** The answer a finished run gives: the Response block's data, else the run's output. */
export const runOutput = (result: RunResult): unknown => (result.response ? result.response.data : result.output);

/**
 * Caps what a run stores and returns: over `maxBytes` of JSON, or not JSON at all (it could not be stored),
 * the run fails with an error naming the limit, and neither the output nor the trace entries' outputs are kept.
 * A paused run's result is its pause (see capPause).
 */
export function capResult(result: RunResult, maxBytes: number): RunResult {
  if (result.status === 'paused') return capPause(result, maxBytes);
  const value = result.response ?? result.output;
  // Measured without building the JSON: a result longer than V8's longest string is still measured (its
  // stringify threw, and the error used to give Number.MAX_SAFE_INTEGER as its size).
  const size = value === undefined || value === null ? null : describedSize(value, maxBytes);
  if (size === null || (size.json && size.bytes <= maxBytes)) return result;
  return failedResult(result, size.bytes > maxBytes
    ? `The run's result is ${size.text}, over the limit of ${maxBytes} bytes (WEFT_MAX_RUN_RESULT_BYTES)`
    : "The run's result cannot be stored: it is not JSON (a cycle or a BigInt)");
}

/**
 * Room a pause point takes in the pause answer and the pause record besides what the engine hands over (its
 * response, ids and scopes): resume links (the base URL twice, the workflow and execution ids, the context id
 * URL-encoded), times and statuses. Generous for a base URL of a few hundred characters; the record's exact
 * size is checked again where it is written (PauseService.persistPause).
 */
const PAUSE_POINT_ROOM_BYTES = 1024;

/**
 * A paused run's result is its pause: the points' forms, answered to the caller and kept in the pause record
 * until they are resumed. Measured before either is built, against the same limit as any result: over it the
 * run fails, nothing of it stored (docs/architecture.md, Where limits are enforced). The answer of 130 points
 * of 1.9 MB each was 243 MB before.
 */
function capPause(result: RunResult, maxBytes: number): RunResult {
  const points = result.pausePoints ?? [];
  const size = describedSize(points, maxBytes);
  let bytes = size.bytes;
  for (const p of points) bytes += PAUSE_POINT_ROOM_BYTES + 10 * Buffer.byteLength(p.contextId);
  if (size.json && bytes <= maxBytes) return result;
  // Past its exact range the measure says "more than ..."; within it the estimate with the links is given.
  const text = size.text.startsWith('more than') ? size.text : `about ${bytes} bytes`;
  return failedResult(result, size.json
    ? `The run's pause is ${text} (${points.length} pause points with their forms and resume links), over the limit of ${maxBytes} bytes (WEFT_MAX_RUN_RESULT_BYTES)`
    : "The run's pause cannot be stored: a pause point's form is not JSON (a cycle or a BigInt)");
}

/** The result of a run failed for what it would store: no output, no pause, no trace outputs. */
export function failedResult(result: RunResult, message: string): RunResult {
  return {
    ...result,
    status: 'failed',
    output: null,
    response: undefined,
    pausePoints: undefined,
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
