// Public API of the workflow engine.
export type {
  WorkflowDefinition,
  BlockDefinition,
  EdgeDefinition,
  DefinitionIssue,
  RunOptions,
  RunResult,
  StepRecord,
  StepRecording,
  BlockTrace,
  PausePoint,
  RetryPolicy,
} from './types.js';
export type {
  EnginePorts,
  HttpPort,
  HttpRequest,
  HttpResponse,
  SandboxPort,
  SandboxRequest,
  SandboxResult,
  SandboxLogEntry,
  ClockPort,
  ChildWorkflowPort,
  ChildRunResult,
  TablesPort,
  TableRowValue,
  AiPort,
  AiMessage,
  AiTool,
  AiToolCall,
  ChatRequest,
  ChatResponse,
  ChatUsage,
  KnowledgePort,
  KnowledgeSearchArgs,
  KnowledgeSearchHit,
  SecretsPort,
  ConnectorsPort,
  ConnectorOperationInfo,
  ConnectorCall,
  McpPort,
  McpSession,
  McpToolInfo,
} from './ports.js';
export { realClock } from './ports.js';
export { workflowDefinitionSchema, validateDefinition, DEFINITION_DEFAULTS } from './definition.js';
export type { ValidateOptions, ValidationResult, CodeChecker, CodeSyntaxError, ConfigChecker } from './definition.js';
export { compile, DefinitionError } from './compile.js';
export type { CompiledGraph } from './compile.js';
export { runWorkflow } from './run.js';
export { RUN_DEFAULTS } from './run-state.js';
export type { RunTree } from './run-tree.js';
export { blockTypes } from './blocks/index.js';
export { webhookConfigSchema, type WebhookConfig } from './blocks/webhook.js';
export { scheduleConfigSchema, type ScheduleConfig } from './blocks/schedule.js';
export { allowedResponseHeaders, RESPONSE_HEADERS_ALLOWED } from './blocks/response-headers.js';
export { defineBlockType, ChildBlockError, RunStoppedError } from './block-type.js';
export type {
  BlockType,
  AnyBlockType,
  BlockContext,
  BlockResult,
  ContainerControl,
  ScopeFrame,
  ScopeOutcome,
} from './block-type.js';
export { normalizeName } from './references.js';
export { secretReferences } from './secret-refs.js';
export { SecretMask, MASK } from './secret-mask.js';
export { declaredFields } from './blocks/start.js';
