// What observability is told about a run, apart from observer.ts so the tracing it builds (tracing.ts) can
// read the same event without importing the observer back.
import type { BlockTrace } from '../engine/index.js';

/** A run that reached a final state (or paused) in this process. */
export interface RunEvent {
  workflowId: string;
  /** The id its callers know (a caller-chosen id as given). */
  executionId: string;
  workspaceId: string;
  trigger: string;
  mode: 'sync' | 'async';
  status: string;
  error?: string | null;
  durationMs: number;
  startedAt: Date;
  endedAt: Date;
  trace: readonly BlockTrace[];
}
