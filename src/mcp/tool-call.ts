// Calling a tool: the workflow runs as an async job (authorized, admitted and billed exactly like the
// execute API's runs, through the ExecutionService), and the call waits for it up to a time limit. A
// run that finishes in time answers with its output; a longer one answers with its job id and status
// URL and keeps running. While waiting, a caller that sent a progressToken gets progress notifications.
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import type { AuthContext } from '../http/auth.js';
import { HttpError } from '../http/errors.js';
import type { ExecutionService } from '../runs/service.js';
import type { WorkflowService } from '../workflows/service.js';
import type { WorkflowTool } from './tool-catalog.js';
import { checkArguments } from './tool-input.js';

/** How long a call waits for its run by default before answering with the job (MCP clients time out at 60 s by default). */
export const DEFAULT_WAIT_SECONDS = 30;
/** A caller may ask for a shorter wait with `_meta: {"weft/waitSeconds": n}` (0 to the default). */
export const WAIT_META_KEY = 'weft/waitSeconds';
const HEARTBEAT_MS = 1000;

export interface ToolCallDeps {
  runs: ExecutionService;
  workflows: WorkflowService;
}

export interface ToolCall {
  auth: AuthContext | undefined;
  arguments: unknown;
  /** Public base URL of the links the answer hands out. */
  baseUrl: string;
  waitSeconds: number;
  signal: AbortSignal;
  /** Set when the caller asked for progress (a progressToken). */
  progress?: (message: string) => Promise<void>;
}

const text = (value: unknown): string => JSON.stringify(value, null, 2);

export function toolError(message: string, structured?: Record<string, unknown>): CallToolResult {
  return { isError: true, content: [{ type: 'text', text: message }], ...(structured ? { structuredContent: structured } : {}) };
}

function answer(structured: Record<string, unknown>, isError = false): CallToolResult {
  return { ...(isError ? { isError: true } : {}), content: [{ type: 'text', text: text(structured) }], structuredContent: structured };
}

const sleep = (ms: number, signal: AbortSignal) => new Promise<void>((resolve) => {
  if (signal.aborted) return resolve();
  const done = () => {
    clearTimeout(timer);
    signal.removeEventListener('abort', done);
    resolve();
  };
  const timer = setTimeout(done, ms);
  signal.addEventListener('abort', done, { once: true });
});

const statusWord = { queued: 'queued', processing: 'running' } as Record<string, string>;

/** Runs the tool's workflow; errors the caller can act on (limits, not deployed) are tool errors. */
export async function callWorkflowTool(deps: ToolCallDeps, tool: WorkflowTool, call: ToolCall): Promise<CallToolResult> {
  const checked = checkArguments(tool.fields, call.arguments);
  if (!checked.ok) return toolError(`Invalid arguments for tool ${tool.name}:\n${checked.problems.map((p) => `- ${p}`).join('\n')}`);

  let executionId: string;
  try {
    // The execute API's gates, in its order: the caller may run the workflow, it is deployed, limits admit it.
    const { access, workflow } = await deps.workflows.forCaller(call.auth, tool.workflow.id, 'read', { forRun: true });
    const run = { workspaceId: access.workspaceId, billedAccount: access.billedAccount, plan: access.plan };
    // The run is queued, but the call answers with its output: it draws on the sync bucket.
    const admitted = await deps.runs.admit(workflow, run, 'async', { bucket: 'sync' });
    executionId = await deps.runs.enqueue(admitted, run, checked.input, { apiKeyId: access.keyId, trigger: 'mcp', baseUrl: call.baseUrl });
  } catch (err) {
    if (err instanceof HttpError && err.status < 500) return toolError(err.message);
    throw err;
  }

  const jobId = `job_${executionId}`;
  const statusUrl = `${call.baseUrl}/api/jobs/${jobId}`;
  const deadline = Date.now() + call.waitSeconds * 1000;
  await call.progress?.(`Run ${executionId} queued`);
  let lastStatus = 'queued';
  let lastBeat = Date.now();
  let delay = 5;
  for (;;) {
    const row = await deps.runs.findRun(tool.workflow.workspace_id, tool.workflow.id, executionId);
    const status = row?.status ?? 'queued';
    if (row && (status === 'completed' || status === 'paused')) {
      await call.progress?.(`Run ${executionId} ${status}`);
      return answer({ executionId, status, output: row.output ?? null });
    }
    if (row && (status === 'failed' || status === 'cancelled')) {
      await call.progress?.(`Run ${executionId} ${status}`);
      return answer({ executionId, status, error: row.error ?? `Run ${status}`, ...(row.error_block ? { errorBlockId: row.error_block } : {}) }, true);
    }
    const now = Date.now();
    if (now >= deadline || call.signal.aborted) {
      return answer({
        executionId, jobId, status: statusWord[status] ?? status, statusUrl,
        message: `The run did not finish within ${call.waitSeconds} s and keeps running as job ${jobId}: GET ${statusUrl} with your API key for its status and output.`,
      });
    }
    if (call.progress && (status !== lastStatus || now - lastBeat >= HEARTBEAT_MS)) {
      lastStatus = status;
      lastBeat = now;
      await call.progress(`Run ${executionId} ${statusWord[status] ?? status} (${Math.round((now - (deadline - call.waitSeconds * 1000)) / 1000)} s)`);
    }
    await sleep(Math.min(delay, deadline - now, HEARTBEAT_MS), call.signal);
    delay = Math.min(delay * 2, 250);
  }
}
