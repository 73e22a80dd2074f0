// Public types of the workflow engine: definitions, run options and results. The engine is pure:
// everything outside reaches it through the ports declared in ./ports.ts (re-exported here so
// existing imports of port types from this file keep working).
import type { EnginePorts, SandboxLogEntry } from './ports.js';
import type { RunTree } from './run-tree.js';

export type {
  AiMessage,
  AiPort,
  AiTool,
  AiToolCall,
  ChatRequest,
  ChatResponse,
  ChatUsage,
  ChildWorkflowPort,
  ClockPort,
  EnginePorts,
  HttpPort,
  HttpRequest,
  HttpResponse,
  KnowledgePort,
  KnowledgeSearchArgs,
  KnowledgeSearchHit,
  SandboxLogEntry,
  SandboxPort,
  SandboxRequest,
  SandboxResult,
  SecretsPort,
  TableRowValue,
  TablesPort,
} from './ports.js';

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

export interface StepRecording {
  /** A replay without this record computes the same output (a pure block's step). */
  recomputable: boolean;
  /**
   * The run ends with this step: a response block, or the run's last block (nothing else running, and after
   * it at most a response block). The run's final state follows at once.
   */
  endsRun: boolean;
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
  /** The output's JSON size when the trace did not keep it (past the run's maxTraceOutputBytes). */
  outputOmittedBytes?: number;
  error?: string;
  logs?: SandboxLogEntry[];
  /** Console lines not kept (past 1,000 an entry or the run's maxTraceLogChars). */
  logsDropped?: number;
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
  /** Type of the entry block the run starts at ('webhook' for webhook deliveries); default: the start block. */
  entry?: string;
  ports: EnginePorts;
  signal?: AbortSignal;
  /**
   * Makes the run's abort controller (default: a plain one). Each block running at once and each child run
   * listens to the run's signal until it ends, so a wide parallel puts up to the tree's concurrency of
   * listeners on it: a host whose runtime warns of a leak past a count (Node: 10) raises it here.
   */
  newController?: () => AbortController;
  /** Run timeout; exceeding it ends the run with status 'timed_out'. */
  timeoutMs?: number;
  /** Blocks running at once in this run and its child runs (default 32). */
  maxConcurrency?: number;
  /** Max iterations of any loop kind (default 1000). */
  loopCap?: number;
  /** Branches of one parallel running at once (default 20). */
  parallelFanOut?: number;
  /** Total branches of one parallel (default 1000). */
  maxParallelBranches?: number;
  /** Nesting depth of child workflows (0 for a top-level run). */
  depth?: number;
  /**
   * The tree a child run joins (ChildWorkflowPort hands the calling run's over): the run then counts against its
   * step budget, held-output bound, concurrency and pacing, and its own maxSteps, maxRunOutputBytes and
   * maxConcurrency are not used. Without it the run starts a tree of its own from those options.
   */
  tree?: RunTree;
  /**
   * Secret values known up front (tests, tools). Runs of the service get theirs through
   * `ports.secrets`, block by block; either way every value resolved is masked in what the run reports.
   */
  secrets?: Record<string, string>;
  /** Overrides definition.variables initial values. */
  variables?: Record<string, unknown>;
  /** Durable replay: a step whose key is here is not run again; its recorded output is used. */
  recorded?: ReadonlyMap<string, StepRecord>;
  /**
   * Awaited after each block completes and before its dependants start. `how` says what a durable record of
   * the step is worth: a recomputable step's record need not be committed first, and the record of a step
   * that ends the run is only needed if the run does not end (it pauses, or is handed back).
   */
  onStep?: (step: StepRecord, how: StepRecording) => Promise<void>;
  /**
   * Block executions per run (default 100,000): every block, container, loop iteration's
   * children, retry attempt and replayed step counts, and those of its child runs. Past it the run fails.
   */
  maxSteps?: number;
  /** Trace entries kept (default 2,000); later ones are dropped and counted in `traceTruncated`. */
  maxTraceEntries?: number;
  /**
   * Largest block output, as the length in bytes of its JSON (default 4 MiB); larger fails the block. A
   * container (loop, parallel) fails as soon as the results it has collected pass it.
   */
  maxBlockOutputBytes?: number;
  /**
   * JSON bytes of block outputs one run may hold until it ends: those its trace keeps and the top level's, and
   * those its running child runs hold (default 16 times maxBlockOutputBytes, 64 MiB). Past it the run fails
   * naming the limit and the block.
   */
  maxRunOutputBytes?: number;
  /**
   * JSON bytes of block outputs the run's trace keeps, all entries together (default 4 MiB); an entry whose
   * output does not fit has `outputOmittedBytes` instead. The run's answer and its final output are whole.
   */
  maxTraceOutputBytes?: number;
  /**
   * Characters of console lines the run's trace keeps, all entries together (default 1 MiB; also at most
   * 1,000 lines an entry); lines past it are counted in the entry's `logsDropped`.
   */
  maxTraceLogChars?: number;
  /**
   * Pause points one run may collect (default 100, DEFAULT_MAX_PAUSE_POINTS in node.ts): the block that would
   * pass it fails the run naming the limit.
   */
  maxPausePoints?: number;
}

export interface RunResult {
  status: 'completed' | 'failed' | 'cancelled' | 'timed_out' | 'paused';
  output: unknown;
  response?: { data: unknown; status: number; headers: Record<string, string> };
  error?: { message: string; blockId?: string; blockName?: string };
  trace: BlockTrace[];
  /** Trace entries dropped past `maxTraceEntries` (absent when none were). */
  traceTruncated?: number;
  /** Blocks this run executed (its child runs' are not included, though the step budget counts them). */
  steps: number;
  pausePoints?: PausePoint[];
  variables: Record<string, unknown>;
  startedAt: string;
  endedAt: string;
  durationMs: number;
}
