// Shapes of the logs API (GET /api/v1/logs, GET /api/v1/logs/{id}) and the workflows list, and their calls.
import { apiFetch } from '../../api/client';

export type RunStatus = 'queued' | 'processing' | 'completed' | 'failed' | 'paused' | 'cancelled';
export const RUN_STATUSES: RunStatus[] = ['queued', 'processing', 'completed', 'failed', 'paused', 'cancelled'];
export const TRIGGERS = ['api', 'webhook', 'schedule', 'manual', 'mcp', 'chat'] as const;

export interface LogRecord {
  id: string; executionId: string; workflowId: string; deploymentVersionId: string | null;
  status: RunStatus; level: string; trigger: string; mode: string;
  createdAt: string; startedAt: string; endedAt: string | null; totalDurationMs: number | null;
  error: string | null; errorBlockId: string | null;
  /** cost.total; null while nothing is recorded. */
  costUsd: number | null;
  /** What the run cost, USD: its base charge plus its blocks' model usage, by model; null while nothing is recorded. */
  cost: RunCost | null;
}

export interface TokenCounts { prompt: number; completion: number; total: number }

export interface ModelCost { input: number; output: number; total: number; tokens: TokenCounts }

export interface RunCost { total: number; base: number; tokens: TokenCounts; models: Record<string, ModelCost> }

export interface TraceEntry {
  blockId: string; key: string; name: string; type: string;
  status: 'success' | 'error' | 'replayed' | 'paused' | string;
  startedAt: string; durationMs: number;
  input?: unknown; output?: unknown; error?: string; logs?: unknown[]; attempts?: number;
}

export interface LogDetail extends LogRecord { input: unknown; output: unknown; trace: TraceEntry[] }

export interface LogFilters {
  status?: string; trigger?: string; workflowId?: string; startDate?: string; endDate?: string;
}

export interface LogPage { data: LogRecord[]; nextCursor?: string }

export async function listLogs(workspaceId: string, filters: LogFilters, cursor: string | undefined, limit = 25): Promise<LogPage> {
  const query: Record<string, string> = { workspaceId, limit: String(limit) };
  for (const [k, v] of Object.entries(filters)) if (v) query[k] = v;
  if (cursor) query.cursor = cursor;
  return apiFetch<LogPage>('/api/v1/logs', { query });
}

export async function getLog(executionId: string): Promise<LogDetail> {
  const r = await apiFetch<{ data: LogDetail }>(`/api/v1/logs/${encodeURIComponent(executionId)}`);
  return r.data;
}

export interface WorkflowSummary { id: string; name: string }

/** Workflow names by id, for showing names instead of ids in lists (the first 500 workflows). */
export async function workflowNames(workspaceId: string): Promise<Map<string, string>> {
  const names = new Map<string, string>();
  let cursor: string | undefined;
  for (let i = 0; i < 5; i++) {
    const query: Record<string, string> = { workspaceId, limit: '100', ...(cursor ? { cursor } : {}) };
    const r = await apiFetch<{ data: WorkflowSummary[]; nextCursor?: string }>('/api/v1/workflows', { query });
    for (const w of r.data) names.set(w.id, w.name);
    cursor = r.nextCursor;
    if (!cursor) break;
  }
  return names;
}

/** A run still changing: its page polls until it ends. */
export const isLive = (s: string) => s === 'queued' || s === 'processing';
