// The executions read as history, page by page: the logs API (`listLogs`) and a workflow's run list
// (`listRuns`), both keyset-paginated. Apart from store.ts, which writes and reads single runs.
import type { Queryable } from '../db/database.js';
import type { ExecutionRow } from './store.js';

export interface LogFilter {
  workspaceId: string; workflowIds?: string[]; statuses?: string[]; level?: string; triggers?: string[];
  startDate?: string; endDate?: string; limit: number; after?: { t: string; id: string };
}

export async function listLogs(q: Queryable, f: LogFilter): Promise<ExecutionRow[]> {
  const where = ['workspace_id = $1'];
  const params: unknown[] = [f.workspaceId];
  const add = (clause: (n: string) => string, value: unknown) => {
    params.push(value);
    where.push(clause(`$${params.length}`));
  };
  if (f.workflowIds?.length) add((p) => `workflow_id::text = ANY(${p}::text[])`, f.workflowIds);
  if (f.statuses?.length) add((p) => `status = ANY(${p}::text[])`, f.statuses);
  if (f.level) add((p) => `level = ${p}`, f.level);
  if (f.triggers?.length) add((p) => `trigger = ANY(${p}::text[])`, f.triggers);
  if (f.startDate) add((p) => `created_at >= ${p}::timestamptz`, f.startDate);
  if (f.endDate) add((p) => `created_at <= ${p}::timestamptz`, f.endDate);
  if (f.after) {
    params.push(f.after.t, f.after.id);
    where.push(`(created_at, id) < ($${params.length - 1}::timestamptz, $${params.length})`);
  }
  params.push(f.limit);
  return q.query<ExecutionRow>(
    `SELECT id, workspace_id, workflow_id, version_id, mode, trigger, status, level, billed_account, api_key_id,
            '{}'::jsonb AS input, NULL::jsonb AS output, error, error_block, NULL::jsonb AS trace,
            created_at, started_at, ended_at, duration_ms, lease_until, attempts, resume_entry_id, slot_token, link_base,
            cancel_requested_at, timeout_ms
       FROM executions WHERE ${where.join(' AND ')}
      ORDER BY created_at DESC, id DESC LIMIT $${params.length}`,
    params,
  );
}

export interface RunFilter {
  workspaceId: string; workflowId: string; statuses?: string[]; trigger?: string; startDate?: string; endDate?: string;
  order: 'asc' | 'desc'; limit: number; after?: { t: string; id: string };
}

export type RunListRow = Pick<ExecutionRow, 'id' | 'workflow_id' | 'status' | 'trigger' | 'created_at' | 'ended_at' | 'duration_ms'> & { started: Date };

/** Runs of one workflow by start time (keyset pagination on start time, then id). */
export async function listRuns(q: Queryable, f: RunFilter): Promise<RunListRow[]> {
  const where = ['workspace_id = $1', 'workflow_id = $2::uuid'];
  const params: unknown[] = [f.workspaceId, f.workflowId];
  const add = (clause: (n: string) => string, value: unknown) => {
    params.push(value);
    where.push(clause(`$${params.length}`));
  };
  const started = 'COALESCE(started_at, created_at)';
  if (f.statuses?.length) add((p) => `status = ANY(${p}::text[])`, f.statuses);
  if (f.trigger) add((p) => `trigger = ${p}`, f.trigger);
  if (f.startDate) add((p) => `${started} >= ${p}::timestamptz`, f.startDate);
  if (f.endDate) add((p) => `${started} <= ${p}::timestamptz`, f.endDate);
  const cmp = f.order === 'desc' ? '<' : '>';
  if (f.after) {
    params.push(f.after.t, f.after.id);
    where.push(`(${started}, id) ${cmp} ($${params.length - 1}::timestamptz, $${params.length})`);
  }
  params.push(f.limit);
  const dir = f.order === 'desc' ? 'DESC' : 'ASC';
  return q.query<RunListRow>(
    `SELECT id, workflow_id, status, trigger, created_at, ended_at, duration_ms, ${started} AS started
       FROM executions WHERE ${where.join(' AND ')}
      ORDER BY ${started} ${dir}, id ${dir} LIMIT $${params.length}`,
    params,
  );
}
