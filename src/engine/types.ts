// Public types of the workflow engine. The engine is pure: everything outside (HTTP, sandbox,
// child workflows, clock, and later AI/tables/knowledge) reaches it through the ports below.

// ---------------------------------------------------------------------------------------------
// Definition
// ---------------------------------------------------------------------------------------------

export interface RetryPolicy {
  /** Total attempts including the first one, 1..5. */
  maxAttempts: number;
  /** Wait before the second attempt; doubled before each further attempt. 0..10000. */
  backoffMs: number;
}

export interface BlockDefinition {
  id: string;
  type: string;
  name: string;
  config: Record<string, unknown>;
  retry?: RetryPolicy;
  /** Children; only for container types (loop, parallel). */
  blocks?: BlockDefinition[];
  [extra: string]: unknown;
}

export interface EdgeDefinition {
  from: string;
  to: string;
  /** Branch handle of the source block (a condition id). */
  branch?: string;
  /** `error`: the edge fires only when the source block fails. */
  on?: 'error';
}

export interface WorkflowDefinition {
  name?: string;
  description?: string;
  variables?: Record<string, unknown>;
  blocks: BlockDefinition[];
  edges: EdgeDefinition[];
  [extra: string]: unknown;
}

export interface DefinitionIssue {
  message: string;
  blockId?: string;
  field?: string;
  path: (string | number)[];
}

// ---------------------------------------------------------------------------------------------
// Ports
// ---------------------------------------------------------------------------------------------

export interface HttpRequest {
  url: string;
  method: string;
  headers: Record<string, string>;
  body?: string;
  timeoutMs: number;
  signal?: AbortSignal;
}

export interface HttpResponse {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/** Throws an Error with a clear message on refusal, timeout or abort. */
export interface HttpPort {
  request(req: HttpRequest): Promise<HttpResponse>;
}

export interface SandboxRequest {
  /** Body of an async function; `return` gives the value. */
  code: string;
  /** Each key becomes a variable visible to the code (values cross as JSON). */
  bindings: Record<string, unknown>;
  timeoutMs: number;
  signal?: AbortSignal;
  /** When given, the code can call `fetch(url, {method, headers, body})` through this port. */
  http?: HttpPort;
}

export interface SandboxLogEntry {
  level: 'log' | 'info' | 'warn' | 'error';
  message: string;
}

export interface SandboxResult {
  value: unknown;
  logs: SandboxLogEntry[];
}

/** Throws Error(message) on a user error, timeout or memory limit. */
export interface SandboxPort {
  run(req: SandboxRequest): Promise<SandboxResult>;
}

export interface ChildWorkflowPort {
  run(
    workflowId: string,
    input: Record<string, unknown>,
    opts: { depth: number; signal: AbortSignal },
  ): Promise<{ success: boolean; output: unknown; error?: string }>;
}

export interface ClockPort {
  now(): number;
  sleep(ms: number, signal: AbortSignal): Promise<void>;
}

export interface EnginePorts {
  http: HttpPort;
  sandbox: SandboxPort;
  workflows?: ChildWorkflowPort;
  clock?: ClockPort;
  /** Ports of block types added by other areas (agent, table, knowledge, ...), keyed by name. */
  [extra: string]: unknown;
}

// ---------------------------------------------------------------------------------------------
// Running
// ---------------------------------------------------------------------------------------------

export interface StepRecord {
  /** blockId plus scope, e.g. "fetch#each:2", "b#outer:1#inner:0"; deterministic across re-runs. */
  key: string;
  blockId: string;
  output: unknown;
  /** Set when the block failed and its error was routed through an error edge. */
  error?: string;
  /** Run variables after the step (variables blocks); restored on replay. */
  variables?: Record<string, unknown>;
}

export interface BlockTrace {
  key: string;
  blockId: string;
  name: string;
  type: string;
  status: 'success' | 'error' | 'replayed' | 'paused';
  startedAt: string;
  durationMs: number;
  /** Resolved config, summarised to about 2 KB (secret values masked). */
  input?: unknown;
  output?: unknown;
  error?: string;
  logs?: SandboxLogEntry[];
  attempts?: number;
}

export interface PausePoint {
  contextId: string;
  blockId: string;
  key: string;
  response: unknown;
  parallelScope?: { parallelId: string; branchIndex: number; branchTotal: number };
  loopScope?: { loopId: string; iteration: number };
}

export interface RunOptions {
  /** Raw caller input; the start block resolves declared fields from input.input[field] then input[field]. */
  input: Record<string, unknown>;
  ports: EnginePorts;
  signal?: AbortSignal;
  /** Run timeout; exceeding it ends the run with status 'timed_out'. */
  timeoutMs?: number;
  /** Blocks running at once in this run (default 32). */
  maxConcurrency?: number;
  /** Max iterations of any loop kind (default 1000). */
  loopCap?: number;
  /** Branches of one parallel running at once (default 20). */
  parallelFanOut?: number;
  /** Total branches of one parallel (default 1000). */
  maxParallelBranches?: number;
  /** Nesting depth of child workflows (0 for a top-level run). */
  depth?: number;
  secrets?: Record<string, string>;
  /** Overrides definition.variables initial values. */
  variables?: Record<string, unknown>;
  /** Durable replay: a step whose key is here is not run again; its recorded output is used. */
  recorded?: ReadonlyMap<string, StepRecord>;
  /** Awaited after each block completes and before its dependants start. */
  onStep?: (step: StepRecord) => Promise<void>;
}

export interface RunResult {
  status: 'completed' | 'failed' | 'cancelled' | 'timed_out' | 'paused';
  output: unknown;
  response?: { data: unknown; status: number; headers: Record<string, string> };
  error?: { message: string; blockId?: string; blockName?: string };
  trace: BlockTrace[];
  pausePoints?: PausePoint[];
  variables: Record<string, unknown>;
  startedAt: string;
  endedAt: string;
  durationMs: number;
}
