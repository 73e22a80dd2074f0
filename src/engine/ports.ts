// The engine's ports: every way a run reaches the world outside (HTTP, the sandbox, the clock,
// child workflows, tables, language models, knowledge bases). Each is an interface owned here; the
// areas that own the capability supply the adapters. The engine is pure: it imports no area and
// no `node:*` module, and reads time only through `ClockPort`.
import type { RunTree } from './run-tree.js';

// ---------------------------------------------------------------------------------------------
// HTTP
// ---------------------------------------------------------------------------------------------

export interface HttpRequest {
  url: string;
  method: string;
  headers: Record<string, string>;
  body?: string;
  timeoutMs: number;
  signal?: AbortSignal;
  /**
   * The body becomes a block's output (http and connector blocks): the port refuses one over the block
   * output cap, naming it, before anyone parses it (docs/architecture.md, "Where limits are enforced").
   */
  blockOutput?: boolean;
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

// ---------------------------------------------------------------------------------------------
// Sandbox
// ---------------------------------------------------------------------------------------------

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

// ---------------------------------------------------------------------------------------------
// Clock
// ---------------------------------------------------------------------------------------------

export interface ClockPort {
  /** Milliseconds since the epoch; every timestamp and duration of a run comes from here. */
  now(): number;
  /** Resolves after `ms`; rejects as soon as `signal` aborts. */
  sleep(ms: number, signal: AbortSignal): Promise<void>;
  /**
   * Lets other work on the event loop run (timers, I/O, other runs). The scheduler calls it every
   * few hundred steps or milliseconds; without it a long synchronous run only yields when a
   * block awaits real I/O.
   */
  yield?(): Promise<void>;
}

// ---------------------------------------------------------------------------------------------
// Child workflows
// ---------------------------------------------------------------------------------------------

export interface ChildRunResult {
  success: boolean;
  output: unknown;
  error?: string;
}

export interface ChildWorkflowPort {
  /**
   * `tree` is the calling run's: the adapter passes it on as the child run's `RunOptions.tree`, so that the child
   * counts against the budgets of the run that called it rather than getting its own.
   */
  run(
    workflowId: string,
    input: Record<string, unknown>,
    opts: { depth: number; signal: AbortSignal; tree: RunTree },
  ): Promise<ChildRunResult>;
}

// ---------------------------------------------------------------------------------------------
// Tables
// ---------------------------------------------------------------------------------------------

/** A row as the tables port returns it. */
export interface TableRowValue {
  id: string;
  data: Record<string, unknown>;
  position: number;
  createdAt: string;
  updatedAt: string;
}

type JsonObject = Record<string, unknown>;

/** What the table block needs from the Tables capability, already scoped to the run's workspace. */
export interface TablesPort {
  query(args: { tableId: string; filter?: JsonObject; sort?: JsonObject; limit?: number; offset?: number }): Promise<{
    rows: TableRowValue[];
    /** Rows matching the filter (null only where a caller asked for no count; the block never does). */
    totalCount: number | null;
    limit: number;
    offset: number;
  }>;
  get(args: { tableId: string; rowId: string }): Promise<TableRowValue>;
  insert(args: { tableId: string; data?: JsonObject; rows?: JsonObject[] }): Promise<{ rows: TableRowValue[] }>;
  upsert(args: { tableId: string; data: JsonObject; conflictTarget?: string }): Promise<{ row: TableRowValue; operation: 'insert' | 'update' }>;
  /** By `rowId`, or every row matching `filter` (the first `limit` in table order when given). */
  update(args: { tableId: string; rowId?: string; filter?: JsonObject; data: JsonObject; limit?: number }): Promise<{ updatedRowIds: string[] }>;
  /** By `rowId` / `rowIds`, or every row matching `filter` (the first `limit` when given). */
  delete(args: { tableId: string; rowId?: string; rowIds?: string[]; filter?: JsonObject; limit?: number }): Promise<{ deletedRowIds: string[] }>;
}

// ---------------------------------------------------------------------------------------------
// AI (agent, router and evaluator blocks; the AI gateway supplies the adapter and bills the run)
// ---------------------------------------------------------------------------------------------

export interface AiToolCall {
  id: string;
  name: string;
  /** JSON text of the arguments, as the model wrote it. */
  arguments: string;
}

export type AiMessage =
  | { role: 'system' | 'user'; content: string }
  | { role: 'assistant'; content: string | null; toolCalls?: AiToolCall[] }
  | { role: 'tool'; toolCallId: string; content: string };

export interface AiTool {
  name: string;
  description?: string;
  /** JSON schema of the arguments (an object schema). */
  parameters: Record<string, unknown>;
}

export interface ChatRequest {
  model: string;
  messages: AiMessage[];
  temperature?: number;
  maxTokens?: number;
  tools?: AiTool[];
  toolChoice?: 'auto' | 'none' | 'required' | { name: string };
  /** Structured output: the answer is JSON matching this schema. */
  responseSchema?: { name: string; schema: Record<string, unknown> };
  signal?: AbortSignal;
}

export interface ChatUsage {
  promptTokens: number;
  completionTokens: number;
  totalTokens: number;
}

export interface ChatResponse {
  /** The model's text (the JSON text with responseSchema); null when it only called tools. */
  content: string | null;
  toolCalls: AiToolCall[];
  finishReason: string;
  usage: ChatUsage;
  /** What the call cost, USD. */
  costUsd: number;
  model: string;
}

/** Throws Error(message) on refusal (unknown model, credits, provider failure). */
export interface AiPort {
  chat(request: ChatRequest): Promise<ChatResponse>;
}

// ---------------------------------------------------------------------------------------------
// Knowledge (knowledge block; the knowledge area supplies the adapter, scoped to the workspace)
// ---------------------------------------------------------------------------------------------

export interface KnowledgeSearchHit {
  documentId: string;
  documentName: string;
  knowledgeBaseId: string;
  chunkIndex: number;
  content: string;
  /** Higher is closer. */
  similarity: number;
  metadata: Record<string, unknown>;
}

export interface KnowledgeSearchArgs {
  knowledgeBaseIds: string[];
  query: string;
  topK: number;
  filters?: Record<string, unknown>;
}

export interface KnowledgePort {
  /** Best matches first. Throws Error(message) on refusal (unknown knowledge base, limits). */
  search(args: KnowledgeSearchArgs): Promise<KnowledgeSearchHit[]>;
}

// ---------------------------------------------------------------------------------------------
// Secrets (`{{NAME}}` references; the secrets area supplies the adapter, scoped to the workspace)
// ---------------------------------------------------------------------------------------------

export interface SecretsPort {
  /**
   * The values of the named secrets, asked for when a block that references them is about to run.
   * Rejects with an Error naming every one that is not set.
   */
  resolve(names: readonly string[]): Promise<Record<string, string>>;
}

// ---------------------------------------------------------------------------------------------
// Connectors (OpenAPI operations and remote MCP servers; the connectors area supplies the adapter,
// scoped to the run's workspace)
// ---------------------------------------------------------------------------------------------

export interface ConnectorOperationInfo {
  operationId: string;
  method: string;
  path: string;
  summary: string;
  description?: string;
  /** Object schema over the path, query and header parameters, by name. */
  parameters: Record<string, unknown>;
  /** JSON Schema of the JSON request body, or null. */
  requestBody: Record<string, unknown> | null;
  bodyRequired?: boolean;
}

export interface ConnectorCall {
  connectorId: string;
  operationId: string;
  parameters?: unknown;
  body?: unknown;
  /**
   * Resolves a workspace secret for the connector's auth through the run, so the run masks its
   * value wherever it reports it.
   */
  secret(name: string): Promise<string>;
}

export interface ConnectorsPort {
  /** The connector's name and operations; throws Error naming an unknown connector. */
  describe(connectorId: string): Promise<{ name: string; operations: ConnectorOperationInfo[] }>;
  /**
   * Validates the parameters and body against the operation's schemas and builds the request with
   * the connector's auth. Throws Error naming the connector, operation or parameter at fault.
   */
  prepare(call: ConnectorCall): Promise<{ url: string; method: string; headers: Record<string, string>; body?: string }>;
}

export interface McpToolInfo {
  name: string;
  description?: string;
  /** JSON Schema of the arguments (an object schema). */
  inputSchema: Record<string, unknown>;
}

/** One connection to a remote MCP server, for the time of one block. */
export interface McpSession {
  tools: McpToolInfo[];
  /** The tool's result content; throws Error naming the server on a failure. */
  call(name: string, args: Record<string, unknown>, signal: AbortSignal): Promise<unknown>;
  close(): Promise<void>;
}

export interface McpPort {
  /** Connects and lists the tools; throws Error naming the server when it does not answer well. */
  open(args: { url: string; headers: Record<string, string>; signal: AbortSignal; timeoutMs: number }): Promise<McpSession>;
}

// ---------------------------------------------------------------------------------------------
// All ports of a run
// ---------------------------------------------------------------------------------------------

export interface EnginePorts {
  http: HttpPort;
  sandbox: SandboxPort;
  /** Pass `realClock` outside tests. */
  clock: ClockPort;
  workflows?: ChildWorkflowPort;
  tables?: TablesPort;
  ai?: AiPort;
  knowledge?: KnowledgePort;
  /** Without it, only the run's `secrets` option resolves `{{NAME}}`. */
  secrets?: SecretsPort;
  connectors?: ConnectorsPort;
  mcp?: McpPort;
}

// ---------------------------------------------------------------------------------------------
// Default adapter the engine supplies itself (globals only: timers and the system clock)
// ---------------------------------------------------------------------------------------------

function abortReason(signal: AbortSignal): Error {
  const reason: unknown = signal.reason;
  return reason instanceof Error ? reason : new Error('Aborted');
}

/** Real time: `sleep` rejects as soon as the signal aborts; `yield` waits for one macrotask turn. */
export const realClock: ClockPort = {
  now: () => Date.now(),
  sleep: (ms, signal) =>
    new Promise<void>((resolve, reject) => {
      if (signal.aborted) {
        reject(abortReason(signal));
        return;
      }
      const onAbort = () => {
        clearTimeout(timer);
        reject(abortReason(signal));
      };
      const timer = setTimeout(() => {
        signal.removeEventListener('abort', onAbort);
        resolve();
      }, Math.max(0, ms));
      signal.addEventListener('abort', onAbort, { once: true });
    }),
  yield: () => new Promise<void>((resolve) => setImmediate(resolve)),
};
