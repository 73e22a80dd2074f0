import type { Queryable } from '../db/database.js';
import type { BlockTrace, StepRecord } from '../engine/index.js';

export type ExecutionStatus = 'queued' | 'processing' | 'completed' | 'failed' | 'paused' | 'cancelled';

export interface ExecutionRow {
  id: string; workspace_id: string; workflow_id: string; version_id: string | null;
  mode: 'sync' | 'async'; trigger: string; status: ExecutionStatus; level: string;
  billed_account: string; api_key_id: string | null; input: Record<string, unknown>;
  output: unknown; error: string | null; error_block: string | null; trace: BlockTrace[] | null;
  created_at: Date; started_at: Date | null; ended_at: Date | null; duration_ms: number | null;
  lease_until: Date | null; attempts: number; resume_entry_id: string | null; slot_token: string | null;
  link_base: string | null; cancel_requested_at: Date | null; timeout_ms: number | null;
}

export interface NewExecution {
  id: string; workspaceId: string; workflowId: string; versionId: string; mode: 'sync' | 'async'; trigger: string;
  status: ExecutionStatus; billedAccount: string; apiKeyId: string | null; input: Record<string, unknown>;
  /** Concurrency slot held by an async run until it ends. */
  slotToken?: string | null;
  /** The resume entry an async resume job runs. */
  resumeEntryId?: string | null;
  /** Public base URL of the links the run hands out. */
  linkBase?: string | null;
  /** The caller's own timeout of an async run (at most the plan's). */
  timeoutMs?: number | null;
}

export interface FinishedExecution {
  status: ExecutionStatus; output: unknown; error: string | null; errorBlock: string | null; trace: BlockTrace[];
  startedAt: Date; endedAt: Date; durationMs: number;
}

const insertColumns = 'id, workspace_id, workflow_id, version_id, mode, trigger, status, billed_account, api_key_id, input, slot_token, resume_entry_id, link_base, timeout_ms';
const insertValues = (e: NewExecution) => [
  e.id, e.workspaceId, e.workflowId, e.versionId, e.mode, e.trigger, e.status, e.billedAccount, e.apiKeyId, JSON.stringify(e.input),
  e.slotToken ?? null, e.resumeEntryId ?? null, e.linkBase ?? null, e.timeoutMs ?? null,
];

/** Claims an execution id: false when it was used before (idempotency). */
export async function claimExecution(q: Queryable, e: NewExecution): Promise<boolean> {
  const rows = await q.query(
    `INSERT INTO executions (${insertColumns}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)
     ON CONFLICT (id) DO NOTHING RETURNING id`,
    insertValues(e),
  );
  return rows.length > 0;
}

/** Writes a finished sync run in one statement (its log is written once, at the end). */
export async function insertFinished(q: Queryable, e: NewExecution, f: FinishedExecution): Promise<boolean> {
  const rows = await q.query(
    `INSERT INTO executions (${insertColumns}, output, error, error_block, trace, started_at, ended_at, duration_ms, level)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22)
     ON CONFLICT (id) DO NOTHING RETURNING id`,
    [...insertValues({ ...e, status: f.status }), json(f.output), f.error, f.errorBlock, JSON.stringify(f.trace),
      f.startedAt, f.endedAt, f.durationMs, f.status === 'failed' ? 'error' : 'info'],
  );
  return rows.length > 0;
}

/**
 * How a statement that ends runs also records their base charges (the limits service's `runCharge()`):
 * `sql(from)` inserts the usage events of the rows of CTE `from` (columns id, billed_account) with the
 * period and amount as parameters $2 and $3, and returns their `idempotency_key`s.
 */
export interface RunChargeSql {
  sql: (from: string) => string;
  period: string;
  amountUsd: string;
}

/**
 * A run ended by one statement: its account, whether its base charge was recorded now, and the account's
 * cost this period with that statement's charges in it (what the execute answer's `limits` shows, so the
 * answer needs no second read).
 */
export interface EndedRun { account: string; charged: boolean; periodCostUsd: number }

/** Runs ended by one statement, by id: each one written now. */
export type EndedRuns = Map<string, EndedRun>;

interface EndedRow { id: string; billed_account: string; charged: boolean; period_cost: string }

const endedRuns = (rows: EndedRow[]): EndedRuns =>
  new Map(rows.map((r) => [r.id, { account: r.billed_account, charged: r.charged, periodCostUsd: Number(r.period_cost) }]));

/**
 * The final select of a statement that ends the runs of CTE `ended` and charges them (CTE `charged`): each
 * run, whether its charge was recorded now, and its account's period total as the statement began plus what
 * `charged` added to it (the totals' trigger runs at the statement's end, after this select). Joins, so a
 * batch costs one pass over `charged`. `$2` is the charges' period.
 */
const endedResult = (ended: string) => `SELECT x.id, x.billed_account, c.idempotency_key IS NOT NULL AS charged,
            (COALESCE(t.cost_usd, 0) + COALESCE(a.added, 0))::text AS period_cost
       FROM ${ended} x
       LEFT JOIN charged c ON c.idempotency_key = 'run:' || x.id
       LEFT JOIN usage_totals t ON t.account = x.billed_account AND t.period = $2::date
       LEFT JOIN (SELECT account, sum(amount_usd) AS added FROM charged GROUP BY account) a ON a.account = x.billed_account`;

/**
 * Writes finished sync runs and their base charges in one statement (so in one round trip and one commit,
 * without BEGIN/COMMIT; group commit, see src/db/group-commit.ts): the rows travel as one JSON array. An id
 * already taken is skipped, like `insertFinished`.
 */
export async function insertFinishedRuns(q: Queryable, runs: readonly { e: NewExecution; f: FinishedExecution }[], charge: RunChargeSql): Promise<EndedRuns> {
  const rows = runs.map(({ e, f }) => ({
    id: e.id, workspace_id: e.workspaceId, workflow_id: e.workflowId, version_id: e.versionId, mode: e.mode, trigger: e.trigger,
    status: f.status, billed_account: e.billedAccount, api_key_id: e.apiKeyId, input: e.input, slot_token: e.slotToken ?? null,
    resume_entry_id: e.resumeEntryId ?? null, link_base: e.linkBase ?? null, timeout_ms: e.timeoutMs ?? null,
    output: f.output === undefined ? null : f.output, error: f.error, error_block: f.errorBlock, trace: f.trace,
    started_at: f.startedAt, ended_at: f.endedAt, duration_ms: f.durationMs, level: f.status === 'failed' ? 'error' : 'info',
  }));
  const written = await q.query<EndedRow>(`WITH written AS (
       INSERT INTO executions (${insertColumns}, output, error, error_block, trace, started_at, ended_at, duration_ms, level)
       SELECT ${insertColumns}, output, error, error_block, trace, started_at, ended_at, duration_ms, level
         FROM jsonb_to_recordset($1::jsonb) AS r(id text, workspace_id uuid, workflow_id uuid, version_id uuid, mode text, trigger text,
              status text, billed_account text, api_key_id uuid, input jsonb, slot_token text, resume_entry_id uuid, link_base text,
              timeout_ms integer, output jsonb, error text, error_block text, trace jsonb, started_at timestamptz, ended_at timestamptz,
              duration_ms integer, level text)
       ON CONFLICT (id) DO NOTHING RETURNING id, billed_account
     ), charged AS (${charge.sql('written')})
     ${endedResult('written')}`, [JSON.stringify(rows), charge.period, charge.amountUsd]);
  return endedRuns(written);
}

/**
 * `claimExecution` of several runs in one statement (group commit of enqueues); returns the rows claimed
 * now by id. A run with `leaseMs` is accepted already leased by its caller's worker (started now, first
 * attempt, `processing`): it needs no lease statement and waits in no queue.
 */
export async function claimExecutions(q: Queryable, runs: readonly (NewExecution & { leaseMs?: number })[]): Promise<Map<string, ExecutionRow>> {
  const rows = await q.query<ExecutionRow>(`INSERT INTO executions (${insertColumns}, created_at, started_at, lease_until, attempts)
     SELECT r.id, r.workspace_id, r.workflow_id, r.version_id, r.mode, r.trigger,
            CASE WHEN r.lease_ms IS NULL THEN r.status ELSE 'processing' END, r.billed_account, r.api_key_id, r.input,
            r.slot_token, r.resume_entry_id, r.link_base, r.timeout_ms,
            n.at, CASE WHEN r.lease_ms IS NOT NULL THEN n.at END,
            CASE WHEN r.lease_ms IS NOT NULL THEN clock_timestamp() + r.lease_ms * interval '1 millisecond' END,
            CASE WHEN r.lease_ms IS NULL THEN 0 ELSE 1 END
       FROM jsonb_to_recordset($1::jsonb) AS r(id text, workspace_id uuid, workflow_id uuid, version_id uuid, mode text, trigger text,
            status text, billed_account text, api_key_id uuid, input jsonb, slot_token text, resume_entry_id uuid, link_base text, timeout_ms integer,
            lease_ms integer),
            (SELECT date_trunc('milliseconds', clock_timestamp()) AS at) AS n
     ON CONFLICT (id) DO NOTHING RETURNING *`, [JSON.stringify(runs.map((e) => ({
    id: e.id, workspace_id: e.workspaceId, workflow_id: e.workflowId, version_id: e.versionId, mode: e.mode, trigger: e.trigger,
    status: e.status, billed_account: e.billedAccount, api_key_id: e.apiKeyId, input: e.input, slot_token: e.slotToken ?? null,
    resume_entry_id: e.resumeEntryId ?? null, link_base: e.linkBase ?? null, timeout_ms: e.timeoutMs ?? null, lease_ms: e.leaseMs ?? null,
  })))]);
  return new Map(rows.map((r) => [r.id, r]));
}

/** Ends a run. With `attempt`, only while that lease is still the run's (a taken-over holder writes nothing); false then. */
export async function finishExecution(q: Queryable, id: string, f: FinishedExecution, attempt?: number): Promise<boolean> {
  const rows = await q.query(
    `UPDATE executions SET status = $2, output = $3, error = $4, error_block = $5, trace = $6,
            started_at = COALESCE(started_at, $7), ended_at = $8,
            duration_ms = (EXTRACT(EPOCH FROM ($8::timestamptz - COALESCE(started_at, $7::timestamptz))) * 1000)::int,
            level = $9, lease_until = NULL
      WHERE id = $1 AND ($10::int IS NULL OR attempts = $10)
     RETURNING id`,
    [id, f.status, json(f.output), f.error, f.errorBlock, JSON.stringify(f.trace), f.startedAt, f.endedAt,
      f.status === 'failed' ? 'error' : 'info', attempt ?? null],
  );
  return rows.length > 0;
}

/**
 * Ends several runs and records their base charges in one statement, each fenced by its lease attempt when
 * it has one (a run whose lease was taken over is left to its new holder and not in the result).
 *
 * The ids also come as an array (`$4`): the planner estimates any JSON record set at 100 rows, and against
 * 100 index lookups it chose to hash-join a full scan of `executions` while the table held a few thousand to
 * a few tens of thousands of runs, so each batch's cost grew with the history (2 to 7 ms a run over 3,000
 * webhook runs, bench/RESULTS.md, "prepared statements on the embedded database"). `id = ANY(array)` is
 * estimated from the array, which keeps this an index lookup per run at any size.
 */
export async function finishRuns(q: Queryable, runs: readonly { id: string; f: FinishedExecution; attempt: number | null }[], charge: RunChargeSql): Promise<EndedRuns> {
  const rows = await q.query<EndedRow>(`WITH ended AS (
       UPDATE executions e SET status = r.status, output = r.output, error = r.error, error_block = r.error_block, trace = r.trace,
              started_at = COALESCE(e.started_at, r.started_at), ended_at = r.ended_at,
              duration_ms = (EXTRACT(EPOCH FROM (r.ended_at - COALESCE(e.started_at, r.started_at))) * 1000)::int,
              level = r.level, lease_until = NULL
         FROM jsonb_to_recordset($1::jsonb) AS r(id text, attempt integer, status text, output jsonb, error text, error_block text,
              trace jsonb, started_at timestamptz, ended_at timestamptz, level text)
        WHERE e.id = ANY($4::text[]) AND e.id = r.id AND (r.attempt IS NULL OR e.attempts = r.attempt)
       RETURNING e.id, e.billed_account
     ), charged AS (${charge.sql('ended')})
     ${endedResult('ended')}`, [JSON.stringify(runs.map(({ id, f, attempt }) => ({
      id, attempt, status: f.status, output: f.output === undefined ? null : f.output, error: f.error, error_block: f.errorBlock,
      trace: f.trace, started_at: f.startedAt, ended_at: f.endedAt, level: f.status === 'failed' ? 'error' : 'info',
    }))), charge.period, charge.amountUsd, runs.map((r) => r.id)]);
  return endedRuns(rows);
}

/** The original execution of a paused run carries the latest state of the whole run after each resume. */
export async function updateRunState(
  q: Queryable,
  id: string,
  s: { status: ExecutionStatus; output: unknown; error: string | null; errorBlock: string | null },
): Promise<void> {
  await q.query(
    `UPDATE executions SET status = $2, output = $3, error = $4, error_block = $5, level = $6, lease_until = NULL,
            ended_at = clock_timestamp(),
            duration_ms = (EXTRACT(EPOCH FROM (clock_timestamp() - COALESCE(started_at, created_at))) * 1000)::int
      WHERE id = $1`,
    [id, s.status, json(s.output), s.error, s.errorBlock, s.status === 'failed' ? 'error' : 'info'],
  );
}

export async function setOutput(q: Queryable, id: string, output: unknown): Promise<void> {
  await q.query('UPDATE executions SET output = $2 WHERE id = $1', [id, json(output)]);
}

/**
 * Takes queued jobs, or processing ones whose worker's lease ran out (a crashed process), in one statement
 * (group commit of worker starts); the rows taken now, by id.
 */
export async function leaseJobs(q: Queryable, ids: readonly string[], leaseMs: number): Promise<Map<string, ExecutionRow>> {
  const rows = await q.query<ExecutionRow>(
    `UPDATE executions SET status = 'processing', started_at = COALESCE(started_at, clock_timestamp()),
            lease_until = clock_timestamp() + ($2::int * interval '1 millisecond'), attempts = attempts + 1
      WHERE id = ANY($1::text[]) AND mode = 'async'
        AND (status = 'queued' OR (status = 'processing' AND (lease_until IS NULL OR lease_until < clock_timestamp())))
      RETURNING *`,
    [[...new Set(ids)], leaseMs],
  );
  return new Map(rows.map((r) => [r.id, r]));
}

/**
 * Renews a run's lease. With `attempt` (async runs) only the holder of that lease renews it: a worker
 * whose lease lapsed and was taken over learns it lost the run ('lost') instead of extending the new
 * holder's lease. 'cancel' when a cancel was asked for.
 */
export async function renewLease(q: Queryable, id: string, leaseMs: number, attempt?: number): Promise<'held' | 'cancel' | 'lost'> {
  const rows = await q.query<{ cancel: boolean }>(
    `UPDATE executions SET lease_until = clock_timestamp() + ($2::int * interval '1 millisecond')
      WHERE id = $1 AND status = 'processing' AND ($3::int IS NULL OR attempts = $3)
     RETURNING cancel_requested_at IS NOT NULL AS cancel`,
    [id, leaseMs, attempt ?? null],
  );
  const row = rows[0];
  if (!row) return attempt === undefined ? 'held' : 'lost';
  return row.cancel ? 'cancel' : 'held';
}

/** Cancels a run still waiting in the queue (it will never start); its row when it was still queued. */
export async function cancelQueued(q: Queryable, id: string): Promise<ExecutionRow | undefined> {
  const rows = await q.query<ExecutionRow>(
    `UPDATE executions SET status = 'cancelled', level = 'info', error = 'Run cancelled', cancel_requested_at = clock_timestamp(),
            ended_at = clock_timestamp(), duration_ms = 0, lease_until = NULL
      WHERE id = $1 AND status = 'queued' RETURNING *`,
    [id],
  );
  return rows[0];
}

/** Records that a running run must stop (whichever process runs it sees it). True when the run was running. */
export async function requestCancel(q: Queryable, id: string): Promise<boolean> {
  const rows = await q.query(
    `UPDATE executions SET cancel_requested_at = COALESCE(cancel_requested_at, clock_timestamp())
      WHERE id = $1 AND status = 'processing' RETURNING id`,
    [id],
  );
  return rows.length > 0;
}

/**
 * Sync runs whose process died mid-run (only a caller-chosen execution id writes their row first):
 * closed as failed so logs never show them running forever.
 */
export async function failInterruptedSyncRuns(q: Queryable, all: boolean): Promise<number> {
  const rows = await q.query(
    `UPDATE executions SET status = 'failed', level = 'error', ended_at = clock_timestamp(), lease_until = NULL,
            error = 'Interrupted: the server stopped during the run'
      WHERE mode = 'sync' AND status = 'processing' AND ($1 OR lease_until IS NULL OR lease_until < clock_timestamp())
      RETURNING id`,
    [all],
  );
  return rows.length;
}

/**
 * Hands a running job back (a worker shutting down): its lease ends now, so the next sweep of any
 * process dispatches it again at once, and the new holder replays its recorded steps.
 */
export async function handBack(q: Queryable, id: string, attempts: number): Promise<void> {
  // Fenced by the lease count: a holder that already lost the run to another process changes nothing.
  await q.query("UPDATE executions SET lease_until = NULL WHERE id = $1 AND attempts = $2 AND status = 'processing' AND mode = 'async'", [id, attempts]);
}

export async function releaseLeases(q: Queryable): Promise<void> {
  await q.query("UPDATE executions SET lease_until = NULL WHERE status = 'processing' AND mode = 'async'");
}

/** Jobs to pick up: queued ones and processing ones whose lease expired (or all processing ones at embedded start-up). */
export async function pendingJobs(q: Queryable, includeAllProcessing: boolean, limit: number): Promise<{ id: string; attempts: number }[]> {
  return q.query<{ id: string; attempts: number }>(
    `SELECT id, attempts FROM executions
      WHERE mode = 'async' AND (status = 'queued'
         OR (status = 'processing' AND ($1 OR lease_until IS NULL OR lease_until < clock_timestamp())))
      ORDER BY created_at LIMIT $2`,
    [includeAllProcessing, limit],
  );
}

export async function findExecution(q: Queryable, id: string): Promise<ExecutionRow | undefined> {
  return q.query<ExecutionRow>('SELECT * FROM executions WHERE id = $1', [id]).then((r) => r[0]);
}

/** The large columns of a run, each up to megabytes: a reader that does not answer one need not read it. */
export interface LargeColumns { input?: boolean; output?: boolean; trace?: boolean }

/** The columns of an ExecutionRow but the large ones (input, output, trace). */
export const SMALL_EXECUTION_COLUMN_NAMES = [
  'id', 'workspace_id', 'workflow_id', 'version_id', 'mode', 'trigger', 'status', 'level', 'billed_account', 'api_key_id',
  'error', 'error_block', 'created_at', 'started_at', 'ended_at', 'duration_ms', 'lease_until', 'attempts', 'resume_entry_id',
  'slot_token', 'link_base', 'cancel_requested_at', 'timeout_ms',
] as const;
const SMALL_EXECUTION_COLUMNS = SMALL_EXECUTION_COLUMN_NAMES.join(', ');

/** An ExecutionRow's columns, the large ones (`LargeColumns`) as asked: one not asked for reads as null. */
function executionColumns(large: LargeColumns): string {
  const keep = (name: keyof LargeColumns) => (large[name] === false ? `NULL AS ${name}` : name);
  return `${SMALL_EXECUTION_COLUMNS}, ${keep('input')}, ${keep('output')}, ${keep('trace')}`;
}

/**
 * The newest execution among stored ids (a public id resolved in the caller's workspaces); the large columns
 * `large` leaves out read as null.
 */
/** Whether a run with exactly this stored id belongs to the workspace. */
export async function executionExistsIn(q: Queryable, id: string, workspaceId: string): Promise<boolean> {
  const rows = await q.query('SELECT 1 FROM executions WHERE id = $1 AND workspace_id = $2', [id, workspaceId]);
  return rows.length > 0;
}

export async function findExecutionAmong(q: Queryable, ids: string[], large: LargeColumns = {}): Promise<ExecutionRow | undefined> {
  if (ids.length === 0) return undefined;
  const columns = large.input === false || large.output === false || large.trace === false ? executionColumns(large) : '*';
  return q.query<ExecutionRow>(`SELECT ${columns} FROM executions WHERE id = ANY($1::text[]) ORDER BY created_at DESC LIMIT 1`, [ids]).then((r) => r[0]);
}

/** What a job poll answers from: a run read without its input, output and trace (each up to megabytes). */
export type ExecutionHead = Pick<ExecutionRow,
  'id' | 'workspace_id' | 'workflow_id' | 'mode' | 'status' | 'error' | 'created_at' | 'started_at' | 'ended_at' | 'duration_ms'>;

/** A run's output as the database's JSON text (never parsed here: a poll sends it on as it is). */
export const executionOutputText = (q: Queryable, id: string) =>
  q.query<{ output: string | null }>('SELECT output::text AS output FROM executions WHERE id = $1', [id]).then((r) => r[0]?.output ?? null);

/** A step record to write, with when the step finished (its order in the run's live timeline). */
export interface TimedStep {
  executionId: string;
  step: StepRecord;
  /** ISO 8601 with microseconds (see StepRecorder). */
  finishedAt: string;
}

/** Steps of several runs in one statement (group commit); a step already recorded is kept. */
export async function recordSteps(q: Queryable, steps: readonly TimedStep[]): Promise<void> {
  await q.query(`INSERT INTO execution_steps (execution_id, step_key, block_id, output, finished_at)
     SELECT execution_id, step_key, block_id, output, finished_at
       FROM jsonb_to_recordset($1::jsonb) AS r(execution_id text, step_key text, block_id text, output jsonb, finished_at timestamptz)
     ON CONFLICT (execution_id, step_key) DO NOTHING`, [JSON.stringify(steps.map(({ executionId, step, finishedAt }) => ({
    execution_id: executionId, step_key: step.key, block_id: step.blockId, finished_at: finishedAt,
    output: { output: step.output ?? null, error: step.error, variables: step.variables },
  })))]);
}

export async function loadSteps(q: Queryable, executionId: string): Promise<Map<string, StepRecord>> {
  const rows = await q.query<{ step_key: string; block_id: string; output: { output: unknown; error?: string; variables?: Record<string, unknown> } }>(
    'SELECT step_key, block_id, output FROM execution_steps WHERE execution_id = $1',
    [executionId],
  );
  return new Map(rows.map((r) => [r.step_key, { key: r.step_key, blockId: r.block_id, output: r.output.output, error: r.output.error, variables: r.output.variables }]));
}

/** A step an unfinished run recorded, with the moment it was recorded. */
export interface RecordedStep extends StepRecord { finishedAt: Date }

/**
 * The steps a run recorded so far (async runs record each block's output as it finishes), in the order
 * they were recorded, at most `limit`: the timeline of a run still running.
 */
export async function stepsSoFar(q: Queryable, executionId: string, limit: number): Promise<RecordedStep[]> {
  const rows = await q.query<{ step_key: string; block_id: string; output: { output: unknown; error?: string } | null; finished_at: Date }>(
    `SELECT step_key, block_id, output, finished_at FROM execution_steps
      WHERE execution_id = $1 ORDER BY finished_at, step_key LIMIT $2`,
    [executionId, limit],
  );
  return rows.map((r) => ({ key: r.step_key, blockId: r.block_id, output: r.output?.output, error: r.output?.error, finishedAt: r.finished_at }));
}

/** JSON for a jsonb parameter; `undefined` output is stored as SQL NULL. */
function json(v: unknown): string | null {
  return v === undefined ? null : JSON.stringify(v);
}

/** Async runs waiting for a worker (uses the pending-jobs partial index). */
export async function countQueued(q: Queryable): Promise<number> {
  const rows = await q.query<{ n: number }>(`SELECT count(*)::int AS n FROM executions WHERE status = 'queued'`);
  return rows[0]?.n ?? 0;
}
