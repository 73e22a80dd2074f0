// Mapping a finished run to the execute route's answer (status code and body), without HTTP objects.
import { allowedResponseHeaders, type RunResult } from '../engine/index.js';
import type { ExecutionRow } from './store.js';

export type ExecuteAnswer =
  | { kind: 'response'; status: number; headers: Record<string, string>; data: unknown }
  | { kind: 'json'; status: number; body: Record<string, unknown> };

/** A run that failed in its start (or webhook) block failed on the caller's input: a 400, not a 500. */
export function inputError(result: RunResult): boolean {
  const blockId = result.error?.blockId;
  return Boolean(blockId && result.trace.some((t) => t.blockId === blockId && (t.type === 'start' || t.type === 'webhook')));
}

/** HTTP status of a run that did not complete. */
export function failureStatus(result: RunResult): number {
  if (result.status === 'timed_out') return 408;
  if (result.status === 'cancelled') return 499;
  return inputError(result) ? 400 : 500;
}

/**
 * The sync execute answer: a Response block's status, headers and body as it set them; otherwise the
 * reference's `{success, executionId, output, limits, metadata}`, or `{success: false, error}` with a failure status.
 */
export function executeAnswer(executionId: string, result: RunResult, output: unknown, limits: () => unknown): ExecuteAnswer | Promise<ExecuteAnswer> {
  const metadata = { duration: result.durationMs, startTime: result.startedAt, endTime: result.endedAt };
  if (result.status === 'completed' && result.response) {
    const r = result.response;
    return { kind: 'response', status: r.status, headers: { ...allowedResponseHeaders(r.headers), 'X-Execution-Id': executionId }, data: r.data ?? null };
  }
  if (result.status === 'completed' || result.status === 'paused') {
    return Promise.resolve(limits()).then((l) => ({
      kind: 'json' as const,
      status: 200,
      body: { success: true, executionId, output: output ?? null, limits: l, metadata, ...(result.status === 'paused' ? { status: 'paused' } : {}) },
    }));
  }
  const error = result.status === 'timed_out'
    ? `Execution timed out after ${Math.round(result.durationMs / 1000)} seconds`
    : result.error?.message ?? 'Execution failed';
  return { kind: 'json', status: failureStatus(result), body: { success: false, executionId, output: result.output ?? null, error, metadata } };
}

type StoredResponse = NonNullable<RunResult['response']>;
const isStoredResponse = (v: unknown): v is StoredResponse =>
  v !== null && typeof v === 'object' && typeof (v as StoredResponse).status === 'number' && 'data' in v;

/**
 * A finished run's result as its row stored it, to answer for it again (a webhook delivery whose first
 * holder died after the run, before its answer was stored); undefined while the run has not finished.
 * The row keeps a Response block's `{data, status, headers}` as its output (see `finishedFrom`).
 */
export function storedRunResult(row: ExecutionRow): RunResult | undefined {
  if (row.status === 'queued' || row.status === 'processing') return undefined;
  const trace = row.trace ?? [];
  const responded = row.status === 'completed' && isStoredResponse(row.output)
    && trace.some((t) => t.type === 'response' && t.status === 'success');
  const startedAt = row.started_at ?? row.created_at;
  return {
    status: row.status,
    output: responded ? (row.output as StoredResponse).data : row.output,
    response: responded ? (row.output as StoredResponse) : undefined,
    error: row.error ? { message: row.error, blockId: row.error_block ?? undefined } : undefined,
    trace,
    steps: 0,
    variables: {},
    startedAt: startedAt.toISOString(),
    endedAt: (row.ended_at ?? startedAt).toISOString(),
    durationMs: row.duration_ms ?? 0,
  };
}
