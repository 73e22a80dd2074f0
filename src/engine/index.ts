// Public API of the workflow engine.
export type {
  WorkflowDefinition,
  BlockDefinition,
  EdgeDefinition,
  DefinitionIssue,
  RunOptions,
  RunResult,
  StepRecord,
  BlockTrace,
  PausePoint,
  EnginePorts,
  HttpPort,
  HttpRequest,
  HttpResponse,
  SandboxPort,
  SandboxRequest,
  SandboxResult,
  SandboxLogEntry,
  ChildWorkflowPort,
  ClockPort,
  RetryPolicy,
} from './types.js';
export { workflowDefinitionSchema, validateDefinition } from './definition.js';
export { compile, DefinitionError } from './compile.js';
export type { CompiledGraph } from './compile.js';
export { runWorkflow } from './run.js';
export { blockTypes, registerBlockType } from './blocks/index.js';
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
export { realClock } from './ports.js';
