// The executions read as history, page by page: the logs API (`listLogs`) and a workflow's run list
// (`listRuns`), both keyset-paginated. Apart from store.ts, which writes and reads single runs.
import type { Queryable } from '../db/database.js';
import { SMALL_EXECUTION_COLUMN_NAMES, type ExecutionRow } from './store.js';

export interface LogFilter {
  workspaceId: string; workflowIds?: string[]; statuses?: string[]; level?: string; triggers?: string[];
  startDate?: Date; endDate?: Date;
  /** Stored ids the public execution id asked for may stand for (execution-ids.ts). */
  executionIds?: string[];
  minDurationMs?: number; maxDurationMs?: number;
  /** Bounds on the run's cost, USD: its usage events summed as run-cost.ts sums them. */
  minCost?: number; maxCost?: number;
  /** Runs whose usage names this model (an agent, router or evaluator block called it). */
  model?: string;
  order: 'asc' | 'desc'; limit: number; after?: { t: string; id: string };
  /**
   * Read the final output and/or the trace too, at most `maxBytes` of their JSON text in the page: past it
   * the rest of the page comes without them (`large: false`) and the caller ends the page there. The first
   * row always has them.
   */
  large?: { output: boolean; trace: boolean; maxBytes: number };
}

/** A log row; `large` is false where the page's byte bound left out its output and trace (see LogFilter). */
export type LogRow = ExecutionRow & { large: boolean };

/** The run's cost as run-cost.ts adds it up: usage events by execution id, base charges of old rows by key. */
const RUN_COST_SQL = `(SELECT COALESCE(sum(u.amount_usd), 0) FROM usage_events u
   WHERE u.execution_id = e.id OR u.idempotency_key = 'run:' || e.id)`;

/**
 * One page of a workspace's execution logs along the logs index (workspace, created_at, id), either way.
 * Filters on cost and model look up each candidate run's usage events by execution id: callers bound the
 * statement (limits/query-timeout.ts), as it may pass over much of the history.
 */
export async function listLogs(q: Queryable, f: LogFilter): Promise<LogRow[]> {
  const where = ['e.workspace_id = $1'];
  const params: unknown[] = [f.workspaceId];
  const add = (clause: (n: string) => string, value: unknown) => {
    params.push(value);
    where.push(clause(`$${params.length}`));
  };
  if (f.workflowIds?.length) add((p) => `e.workflow_id::text = ANY(${p}::text[])`, f.workflowIds);
  if (f.statuses?.length) add((p) => `e.status = ANY(${p}::text[])`, f.statuses);
  if (f.level) add((p) => `e.level = ${p}`, f.level);
  if (f.triggers?.length) add((p) => `e.trigger = ANY(${p}::text[])`, f.triggers);
  if (f.startDate) add((p) => `e.created_at >= ${p}::timestamptz`, f.startDate);
  if (f.endDate) add((p) => `e.created_at <= ${p}::timestamptz`, f.endDate);
  if (f.executionIds) add((p) => `e.id = ANY(${p}::text[])`, f.executionIds);
  if (f.minDurationMs !== undefined) add((p) => `e.duration_ms >= ${p}::float8`, f.minDurationMs);
  if (f.maxDurationMs !== undefined) add((p) => `e.duration_ms <= ${p}::float8`, f.maxDurationMs);
  if (f.minCost !== undefined) add((p) => `${RUN_COST_SQL} >= ${p}::numeric`, f.minCost);
  if (f.maxCost !== undefined) add((p) => `${RUN_COST_SQL} <= ${p}::numeric`, f.maxCost);
  if (f.model !== undefined) {
    add((p) => `EXISTS (SELECT 1 FROM usage_events u WHERE u.execution_id = e.id AND u.source <> 'run'
      AND COALESCE(u.metadata->>'model', u.source) = ${p})`, f.model);
  }
  const dir = f.order === 'asc' ? 'ASC' : 'DESC';
  if (f.after) {
    params.push(f.after.t, f.after.id);
    where.push(`(e.created_at, e.id) ${f.order === 'asc' ? '>' : '<'} ($${params.length - 1}::timestamptz, $${params.length})`);
  }
  params.push(f.limit);
  const limit = `$${params.length}`;
  const order = `e.created_at ${dir}, e.id ${dir}`;
  const head = SMALL_EXECUTION_COLUMN_NAMES.map((c) => `e.${c}`).join(', ');
  const page = (extra: string) => `SELECT ${head}, ${extra} FROM executions e WHERE ${where.join(' AND ')} ORDER BY ${order} LIMIT ${limit}`;
  if (!f.large) {
    return q.query<LogRow>(page(`'{}'::jsonb AS input, NULL::jsonb AS output, NULL::jsonb AS trace, true AS large`), params);
  }
  const { output, trace, maxBytes } = f.large;
  params.push(maxBytes);
  // Sizes as JSON text, summed along the page; the first row comes whole whatever its size.
  const size = [output ? 'COALESCE(octet_length(e.output::text), 0)' : '0', trace ? 'COALESCE(octet_length(e.trace::text), 0)' : '0'].join(' + ');
  const inner = page(`${output ? 'e.output' : 'NULL::jsonb'} AS big_output, ${trace ? 'e.trace' : 'NULL::jsonb'} AS big_trace, ${size} AS bytes`);
  const along = (t: string) => `${t}.created_at ${dir}, ${t}.id ${dir}`;
  return q.query<LogRow>(
    `SELECT ${SMALL_EXECUTION_COLUMN_NAMES.map((c) => `w.${c}`).join(', ')}, '{}'::jsonb AS input,
            CASE WHEN w.whole THEN w.big_output END AS output, CASE WHEN w.whole THEN w.big_trace END AS trace, w.whole AS large
       FROM (SELECT p.*, (sum(p.bytes) OVER page_so_far <= $${params.length}::bigint OR row_number() OVER page_so_far = 1) AS whole
               FROM (${inner}) p WINDOW page_so_far AS (ORDER BY ${along('p')} ROWS UNBOUNDED PRECEDING)) w
      ORDER BY ${along('w')}`,
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
