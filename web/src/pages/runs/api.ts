// The logs API (GET /api/v1/logs, GET /api/v1/logs/{id}) and the workflows list; shapes from the generated schema.
import { api } from '../../api/client';
import type { DataOf, Success } from '../../api/schema';

export type LogRecord = Success<'/api/v1/logs'>['data'][number];
export type LogDetail = DataOf<'/api/v1/logs/{id}'>;
export type TraceEntry = LogDetail['trace'][number];
export type RunStatus = LogRecord['status'];
export type RunCost = NonNullable<LogRecord['cost']>;
export const RUN_STATUSES: RunStatus[] = ['queued', 'processing', 'completed', 'failed', 'paused', 'cancelled'];
export const TRIGGERS = ['api', 'webhook', 'schedule', 'manual', 'mcp', 'chat'] as const;

export interface LogFilters {
  status?: string; trigger?: string; workflowId?: string; startDate?: string; endDate?: string;
}

export type LogPage = Success<'/api/v1/logs'>;

export async function listLogs(workspaceId: string, filters: LogFilters, cursor: string | undefined, limit = 25): Promise<LogPage> {
  const query: Record<string, string> = { workspaceId, limit: String(limit) };
  for (const [k, v] of Object.entries(filters)) if (v) query[k] = v;
  if (cursor) query.cursor = cursor;
  return api('/api/v1/logs', { query });
}

export async function getLog(executionId: string): Promise<LogDetail> {
  const r = await api('/api/v1/logs/{id}', { params: { id: executionId } });
  return r.data;
}

/** Workflow names by id, for showing names instead of ids in lists (the first 500 workflows). */
export async function workflowNames(workspaceId: string): Promise<Map<string, string>> {
  const names = new Map<string, string>();
  let cursor: string | undefined;
  for (let i = 0; i < 5; i++) {
    const query: Record<string, string> = { workspaceId, limit: '100', ...(cursor ? { cursor } : {}) };
    const r = await api('/api/v1/workflows', { query });
    for (const w of r.data) names.set(w.id, w.name);
    cursor = r.nextCursor;
    if (!cursor) break;
  }
  return names;
}

/** A run still changing: its page polls until it ends. */
export const isLive = (s: string) => s === 'queued' || s === 'processing';
