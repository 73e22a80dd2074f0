// Reading an execute request: which body fields steer the run, the caller-chosen id, and the mode.
import { HttpError } from '../http/errors.js';

/** Body fields that steer the run rather than feed it. */
const CONTROL_FIELDS = new Set([
  'async', 'inputs', 'stream', 'selectedOutputs', 'triggerType', 'executionId', 'workflowId', 'includeFileBase64',
  'base64MaxBytes', 'useDraftState', 'workflowStateOverride', 'startBlockId', 'triggerBlockId', 'stopAfterBlockId',
  'runFromBlock', 'parentWorkspaceId', 'deploymentVersionId', 'copilotToolCallId', 'inputFromExecutionId', 'isClientSession',
]);
const executionIdPattern = /^[A-Za-z0-9._:-]{1,128}$/;

type Headers = Record<string, string | string[] | undefined>;

const headerValue = (v: string | string[] | undefined): string | undefined => (Array.isArray(v) ? v[0] : v);

/** The run's input: top-level fields that do not steer the run, then `inputs` on top (the spec's shape). */
export function workflowInput(body: Record<string, unknown>): Record<string, unknown> {
  const input: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(body)) if (!CONTROL_FIELDS.has(k)) input[k] = v;
  const inputs = body.inputs;
  return inputs && typeof inputs === 'object' && !Array.isArray(inputs) ? { ...input, ...(inputs as Record<string, unknown>) } : input;
}

/** The caller-chosen execution id: X-Execution-Id, Idempotency-Key, or the body's executionId (a 400 when malformed). */
export function requestedExecutionId(headers: Headers, body: Record<string, unknown>): string | undefined {
  const id = headerValue(headers['x-execution-id']) ?? headerValue(headers['idempotency-key'])
    ?? (typeof body.executionId === 'string' ? body.executionId : undefined);
  if (id !== undefined && !executionIdPattern.test(id)) {
    throw new HttpError(400, 'Invalid execution ID header', { details: [{ path: 'x-execution-id', message: 'Use 1 to 128 characters of A-Z a-z 0-9 . _ : -' }] });
  }
  return id;
}

/**
 * Controls of the reference service's execute that Weft does not carry out, or not in this mode: a 400 naming
 * them, where ignoring them would run something else than the caller asked for.
 */
export function refuseUnsupportedControls(body: Record<string, unknown>, isAsync: boolean): void {
  if (body.triggerType !== undefined && body.triggerType !== 'api') throw new HttpError(400, 'External callers cannot override triggerType');
  if (isAsync && ['stopAfterBlockId', 'runFromBlock', 'workflowStateOverride', 'includeFileBase64', 'base64MaxBytes'].some((k) => body[k] !== undefined)) {
    throw new HttpError(400, 'Async execution does not support draft or override execution controls');
  }
  for (const k of ['isClientSession', 'workflowStateOverride', 'inputFromExecutionId', 'deploymentVersionId', 'stopAfterBlockId', 'runFromBlock']) {
    if (body[k] !== undefined) throw new HttpError(400, `${k} is not supported by this server`);
  }
}

/** Async when the body says `async: true` or the X-Execution-Mode header says `async`. */
export function isAsyncRequest(headers: Headers, body: Record<string, unknown>): boolean {
  return body.async === true || headerValue(headers['x-execution-mode'])?.toLowerCase() === 'async';
}

/** X-Execution-Timeout-Seconds (async only, 1..604800): the run's own timeout, capped by the plan's. */
export function requestedTimeoutSeconds(headers: Headers, isAsync: boolean): number | undefined {
  const raw = headerValue(headers['x-execution-timeout-seconds']);
  if (raw === undefined) return undefined;
  const n = Number(raw.trim());
  if (!/^\d+$/.test(raw.trim()) || n < 1 || n > 604_800) {
    throw new HttpError(400, 'Invalid execution timeout header', { details: [{ path: 'x-execution-timeout-seconds', message: 'Use a whole number of seconds from 1 to 604800' }] });
  }
  if (!isAsync) throw new HttpError(400, 'X-Execution-Timeout-Seconds is supported only for async runs');
  return n;
}
