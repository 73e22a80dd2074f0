// The logs API (/api/v1/logs): runs as history, read with the reference service's parameters and shapes
// (docs/architecture.md, "The logs API"), beside Weft's own fields. A list of logs is a scan a tenant
// shapes, so it runs inside the workspace's scan gate and the query timeout, as table queries do.
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { AccountsService } from '../accounts/service.js';
import type { AppContext } from '../context.js';
import type { BlockDefinition, BlockTrace } from '../engine/index.js';
import { requireAuth } from '../http/auth.js';
import { HttpError, badRequest } from '../http/errors.js';
import { decodeCursor, encodeCursor } from '../http/pagination.js';
import { clampedLimit, queryDate, queryFlag, queryList } from '../http/query-params.js';
import { errorResponses } from '../http/schemas.js';
import type { QueryTimeout } from '../limits/query-timeout.js';
import type { RunCost } from '../limits/run-cost.js';
import { limitsSchema, runCostSchema } from '../limits/schemas.js';
import type { WorkspaceGate } from '../limits/workspace-gate.js';
import type { WorkflowService } from '../workflows/service.js';
import { publicExecutionId, storedExecutionIds } from './execution-ids.js';
import { listLogs, type LogRow } from './history-store.js';
import type { ExecutionService } from './service.js';
import * as store from './store.js';
import type { ExecutionRow } from './store.js';
import { redactedWorkflowState } from './workflow-state.js';

/** Logs a page holds at most, and without `limit`: the reference's. */
export const LOG_PAGE_MAX = 1000;
const LOG_PAGE_DEFAULT = 100;
/** Logs a page holds at most when it carries final outputs or trace spans (each up to megabytes). */
export const LOG_PAGE_MAX_WITH_DATA = 100;
/** JSON bytes of final outputs and trace spans a page of logs holds at most (its first log whatever its size). */
export const LOG_PAGE_MAX_DATA_BYTES = 8 * 1024 * 1024;

const statuses = ['queued', 'processing', 'completed', 'failed', 'paused', 'cancelled'] as const;

/** `cost`: what the run cost so far (see limits/run-cost.ts), undefined while nothing is recorded. */
function logRecord(r: ExecutionRow, cost: RunCost | undefined) {
  return {
    id: publicExecutionId(r.id),
    executionId: publicExecutionId(r.id),
    workflowId: r.workflow_id,
    deploymentVersionId: r.version_id,
    status: r.status,
    level: r.level,
    trigger: r.trigger,
    mode: r.mode,
    createdAt: r.created_at.toISOString(),
    startedAt: (r.started_at ?? r.created_at).toISOString(),
    endedAt: r.ended_at ? r.ended_at.toISOString() : null,
    totalDurationMs: r.duration_ms,
    error: r.error,
    errorBlockId: r.error_block,
    costUsd: cost?.total ?? null,
    cost: cost ?? null,
    // Weft keeps no files with a run's log (a webhook's files live under /api/v1/webhooks/files).
    files: null,
  };
}

/** The workflow of a log as the reference names it; a deleted workflow keeps its id only. */
function workflowOfLog(id: string, found: { name: string; description: string } | undefined) {
  return found ? { id, name: found.name, description: found.description, deleted: false } : { id, name: 'Deleted Workflow', description: null, deleted: true };
}

/** A trace in the reference's trace-span shape: an entry per block run, with its start, end and duration. */
function traceSpans(trace: readonly BlockTrace[]) {
  return trace.map((e) => {
    const start = Date.parse(e.startedAt);
    return {
      id: e.key, blockId: e.blockId, name: e.name, type: e.type, status: e.status,
      startTime: e.startedAt, endTime: Number.isNaN(start) ? e.startedAt : new Date(start + e.durationMs).toISOString(), duration: e.durationMs,
      ...(e.input !== undefined ? { input: e.input } : {}),
      ...(e.output !== undefined ? { output: e.output } : {}),
      ...(e.outputOmittedBytes !== undefined ? { outputOmittedBytes: e.outputOmittedBytes } : {}),
      ...(e.error !== undefined ? { error: e.error } : {}),
      ...(e.logs !== undefined ? { logs: e.logs } : {}),
    };
  });
}

/** Names and types of a definition's blocks by id, containers' children included. */
function blockInfo(blocks: readonly BlockDefinition[], into = new Map<string, { name: string; type: string }>()) {
  for (const b of blocks) {
    into.set(b.id, { name: b.name, type: b.type });
    if (b.blocks) blockInfo(b.blocks, into);
  }
  return into;
}

const workflowOfLogSchema = z.object({ id: z.string(), name: z.string(), description: z.string().nullable(), deleted: z.boolean() });
const traceEntrySchema = z.object({
  blockId: z.string(), key: z.string(), name: z.string(), type: z.string(), status: z.string(),
  startedAt: z.string(), durationMs: z.number(), input: z.unknown().optional(), output: z.unknown().optional(),
  outputOmittedBytes: z.number().optional()
    .describe("The output's JSON size, when the trace did not keep it (past the run's WEFT_MAX_TRACE_OUTPUT_BYTES)"),
  error: z.string().optional(), logs: z.array(z.unknown()).optional(),
  logsDropped: z.number().optional().describe('Console lines not kept (past 1,000 a block or the run\'s WEFT_MAX_TRACE_LOG_CHARS)'),
  attempts: z.number().optional(),
});
const traceSpanSchema = z.object({
  id: z.string(), blockId: z.string(), name: z.string(), type: z.string(), status: z.string(),
  startTime: z.string(), endTime: z.string(), duration: z.number(),
  input: z.unknown().optional(), output: z.unknown().optional(), outputOmittedBytes: z.number().optional(),
  error: z.string().optional(), logs: z.array(z.unknown()).optional(),
});

const logSchema = z.object({
  id: z.string(), executionId: z.string(), workflowId: z.string(), deploymentVersionId: z.string().nullable(),
  status: z.string(), level: z.string(), trigger: z.string(), mode: z.string(), createdAt: z.string(), startedAt: z.string(),
  endedAt: z.string().nullable(), totalDurationMs: z.number().nullable(), error: z.string().nullable(), errorBlockId: z.string().nullable(),
  costUsd: z.number().nullable().describe('cost.total: what the run cost, USD. null while nothing is recorded'),
  cost: runCostSchema.nullable().describe(
    'What the run cost, USD: its base charge plus the model usage of its agent, router and evaluator blocks (child workflows\' included), by model. ' +
      'A run still going shows what it spent so far (its base charge is written when it ends). null while nothing is recorded (a queued run)',
  ),
  files: z.null().describe('Always null: Weft keeps no files with a run\'s log'),
});

const listItemSchema = logSchema.extend({
  workflow: workflowOfLogSchema.optional().describe('details=full: the workflow, "Deleted Workflow" once it is gone'),
  finalOutput: z.unknown().optional().describe('details=full with includeFinalOutput: the run\'s output'),
  traceSpans: z.array(traceSpanSchema).optional().describe('details=full with includeTraceSpans: one span per block run'),
});

export interface LogRouteDeps {
  /** The workspace scan gate and query timeout every tenant-shaped scan runs in (compose.ts). */
  scans: WorkspaceGate;
  queryTimeout: QueryTimeout;
}

export function logRoutes(service: ExecutionService, workflows: WorkflowService, accounts: AccountsService, deps: LogRouteDeps): FastifyPluginAsyncZod<{ ctx: AppContext }> {
  return async (app, { ctx }) => {
    const { db } = ctx;

    /**
     * The timeline of an async run still queued or running: the blocks it recorded so far (its trace is
     * written when it ends). execution_steps keeps only when each step finished, so a block's start is
     * estimated as the previous recorded step's finish (the run's start for the first): right for a
     * chain of blocks, too early for blocks that ran side by side (parallel branches).
     */
    async function liveTrace(row: ExecutionRow): Promise<BlockTrace[]> {
      const [steps, version] = await Promise.all([
        store.stepsSoFar(db, row.id, ctx.config.maxTraceEntries),
        row.version_id ? workflows.loadVersion(row.version_id) : undefined,
      ]);
      const info = blockInfo(version?.definition.blocks ?? []);
      let previous = (row.started_at ?? row.created_at).getTime();
      return steps.map((step) => {
        const ended = step.finishedAt.getTime();
        const started = Math.min(previous, ended);
        previous = Math.max(previous, ended);
        const block = info.get(step.blockId);
        return {
          key: step.key, blockId: step.blockId, name: block?.name ?? step.blockId, type: block?.type ?? 'unknown',
          status: step.error ? 'error' as const : 'success' as const,
          startedAt: new Date(started).toISOString(), durationMs: ended - started,
          output: step.output ?? null, ...(step.error ? { error: step.error } : {}),
        };
      });
    }

    app.get('/api/v1/logs', {
      config: { errorFamily: 'v1' },
      schema: {
        tags: ['logs'],
        summary: 'Execution logs, newest first (or oldest with order=asc), with cursor pagination',
        description: `Filters combine with AND. A page holds at most \`limit\` logs (clamped to 1..${LOG_PAGE_MAX}); with details=full and `
          + `includeFinalOutput or includeTraceSpans at most ${LOG_PAGE_MAX_WITH_DATA}, and it ends once it holds `
          + `${LOG_PAGE_MAX_DATA_BYTES / 1024 / 1024} MiB of outputs and spans (at least one log); \`nextCursor\` fetches the next.`,
        querystring: z.object({
          workspaceId: z.string().min(1).max(128),
          workflowId: z.string().max(128).optional(),
          workflowIds: z.string().max(4000).optional().describe('Comma-separated workflow ids'),
          folderIds: z.string().max(4000).optional()
            .describe('Comma-separated folder ids. Weft has no folders: no run is in one, so a non-empty list answers no logs'),
          status: z.enum(statuses).optional(),
          level: z.enum(['info', 'error']).optional(),
          triggers: z.string().max(200).optional().describe('Comma-separated triggers: api, webhook, schedule, manual, mcp, ...; all: any'),
          trigger: z.string().max(200).optional().describe('The same as triggers'),
          startDate: z.string().max(40).optional().describe('ISO 8601 date or timestamp: runs created at or after it'),
          endDate: z.string().max(40).optional().describe('ISO 8601 date or timestamp: runs created at or before it'),
          executionId: z.string().max(200).optional().describe('The run with this execution id'),
          minDurationMs: z.coerce.number().min(0).max(1e12).optional(),
          maxDurationMs: z.coerce.number().min(0).max(1e12).optional(),
          minCost: z.coerce.number().min(0).max(1e12).optional().describe('USD, inclusive: the run\'s cost.total'),
          maxCost: z.coerce.number().min(0).max(1e12).optional().describe('USD, inclusive: the run\'s cost.total'),
          model: z.string().max(200).optional().describe('Runs whose blocks called this model'),
          details: z.enum(['basic', 'full']).default('basic').describe('full adds each log\'s workflow, and what the include flags ask for'),
          includeTraceSpans: z.string().max(10).optional().describe('true/false/1/0, with details=full: each log\'s trace spans'),
          includeFinalOutput: z.string().max(10).optional().describe('true/false/1/0, with details=full: each log\'s final output'),
          order: z.enum(['desc', 'asc']).default('desc'),
          limit: z.coerce.number().optional().describe(`1 to ${LOG_PAGE_MAX} (default ${LOG_PAGE_DEFAULT}); values outside are clamped, as the reference clamps them`),
          cursor: z.string().max(512).optional(),
        }),
        response: { 200: z.object({ data: z.array(listItemSchema), nextCursor: z.string().optional(), limits: limitsSchema }), ...errorResponses },
      },
    }, async (request) => {
      const q = request.query;
      const after = decodeCursor(q.cursor);
      // A cursor names its direction (a descending one carries none, as before `order` existed).
      if (after && (after.o ?? 'desc') !== q.order) throw badRequest('Invalid cursor');
      const full = q.details === 'full';
      const withOutput = full && (queryFlag('includeFinalOutput', q.includeFinalOutput) ?? false);
      const withTrace = full && (queryFlag('includeTraceSpans', q.includeTraceSpans) ?? false);
      const large = withOutput || withTrace;
      const limit = Math.min(clampedLimit(q.limit, LOG_PAGE_DEFAULT, LOG_PAGE_MAX), large ? LOG_PAGE_MAX_WITH_DATA : LOG_PAGE_MAX);
      const startDate = queryDate('startDate', q.startDate);
      const endDate = queryDate('endDate', q.endDate);
      const access = await accounts.authorize(request.auth, q.workspaceId, 'read');
      const limits = () => service.limits.snapshot(access.billedAccount, access.plan);
      const workflowIds = [q.workflowId, ...queryList(q.workflowIds)].filter((s): s is string => Boolean(s?.trim())).map((s) => s.trim());
      const triggers = [...queryList(q.triggers), ...queryList(q.trigger)];
      if (queryList(q.folderIds).length > 0) return { data: [], limits: await limits() };
      const rows = await deps.scans.run(access.workspaceId, () => deps.queryTimeout.run(db, 'log query', (tx) => listLogs(tx, {
        workspaceId: access.workspaceId,
        workflowIds: workflowIds.length ? workflowIds : undefined,
        statuses: q.status ? [q.status] : undefined,
        level: q.level,
        triggers: triggers.length && !triggers.includes('all') ? triggers : undefined,
        startDate, endDate,
        executionIds: q.executionId !== undefined ? storedExecutionIds(q.executionId.trim(), [access.workspaceId]) : undefined,
        minDurationMs: q.minDurationMs, maxDurationMs: q.maxDurationMs, minCost: q.minCost, maxCost: q.maxCost,
        model: q.model?.trim() || undefined,
        order: q.order,
        limit: limit + 1,
        after,
        large: large ? { output: withOutput, trace: withTrace, maxBytes: LOG_PAGE_MAX_DATA_BYTES } : undefined,
      })));
      const { data, nextCursor } = logPage(rows, limit, q.order);
      const [costs, names] = await Promise.all([
        service.limits.runCosts(data.map((r) => r.id)),
        full ? workflows.names(access.workspaceId, data.map((r) => r.workflow_id)) : undefined,
      ]);
      return {
        data: data.map((r) => ({
          ...logRecord(r, costs.get(r.id)),
          ...(names ? { workflow: workflowOfLog(r.workflow_id, names.get(r.workflow_id)) } : {}),
          ...(withOutput ? { finalOutput: r.output ?? null } : {}),
          ...(withTrace ? { traceSpans: traceSpans(r.trace ?? []) } : {}),
        })),
        ...(nextCursor ? { nextCursor } : {}),
        limits: await limits(),
      };
    });

    app.get('/api/v1/logs/:id', {
      schema: {
        tags: ['logs'],
        summary: 'One execution log with its per-block trace (of an async run still queued or running: the blocks recorded so far, start times estimated)',
        description: 'executionData holds the same run in the reference service\'s shape: its trace spans and final output.',
        params: z.object({ id: z.string().min(1).max(128) }),
        response: {
          200: z.object({
            limits: limitsSchema,
            data: logSchema.extend({
              input: z.unknown(), output: z.unknown(),
              trace: z.array(traceEntrySchema),
              workflow: workflowOfLogSchema,
              executionData: z.object({ traceSpans: z.array(traceSpanSchema), finalOutput: z.unknown() }),
            }),
          }),
          ...errorResponses,
        },
      },
    }, async (request) => {
      const { workspaceIds } = await accounts.billedAccount(requireAuth(request));
      const row = await store.findExecutionAmong(db, storedExecutionIds(request.params.id, workspaceIds));
      if (!row) throw new HttpError(404, 'Log not found');
      const access = await accounts.authorize(request.auth, row.workspace_id, 'read', { conceal: true, notFoundMessage: 'Log not found' });
      const live = row.mode === 'async' && (row.status === 'queued' || row.status === 'processing') && !row.trace?.length;
      const [trace, costs, names] = await Promise.all([
        live ? liveTrace(row) : row.trace ?? [],
        service.limits.runCosts([row.id]),
        workflows.names(row.workspace_id, [row.workflow_id]),
      ]);
      const output = row.output ?? null;
      return {
        data: {
          ...logRecord(row, costs.get(row.id)), input: row.input, output, trace,
          workflow: workflowOfLog(row.workflow_id, names.get(row.workflow_id)),
          executionData: { traceSpans: traceSpans(trace), finalOutput: output },
        },
        limits: await service.limits.snapshot(access.billedAccount, access.plan),
      };
    });

    app.get('/api/v1/logs/executions/:executionId', {
      schema: {
        tags: ['logs'],
        summary: 'The workflow as a run ran it (its deployed version, or the draft snapshot of a draft run), credentials in block settings redacted, with the run\'s timing and cost',
        params: z.object({ executionId: z.string().min(1).max(200) }),
        response: {
          200: z.object({
            executionId: z.string(), workflowId: z.string(),
            workflowState: z.object({ blocks: z.array(z.unknown()), edges: z.array(z.unknown()) }).catchall(z.unknown()),
            executionMetadata: z.object({
              trigger: z.string(), startedAt: z.string(), endedAt: z.string().nullable(), totalDurationMs: z.number().nullable(),
              cost: runCostSchema.nullable(),
            }),
            limits: limitsSchema,
          }),
          ...errorResponses,
        },
      },
    }, async (request) => {
      const notFound = 'Workflow execution not found';
      const { workspaceIds } = await accounts.billedAccount(requireAuth(request));
      const row = await store.findExecutionAmong(db, storedExecutionIds(request.params.executionId, workspaceIds), { input: false, output: false, trace: false });
      if (!row) throw new HttpError(404, notFound);
      const access = await accounts.authorize(request.auth, row.workspace_id, 'read', { conceal: true, notFoundMessage: notFound });
      // Versions go with their workflow (versions are cached once read, so the workflow is looked up too): a
      // deleted workflow's runs have no snapshot left.
      const [version, names, costs] = await Promise.all([
        row.version_id ? workflows.loadVersion(row.version_id) : undefined,
        workflows.names(row.workspace_id, [row.workflow_id]),
        service.limits.runCosts([row.id]),
      ]);
      if (!version || version.workspace_id !== row.workspace_id || !names.has(row.workflow_id)) throw new HttpError(404, 'Workflow state snapshot not found');
      const record = logRecord(row, costs.get(row.id));
      return {
        executionId: record.executionId,
        workflowId: row.workflow_id,
        workflowState: redactedWorkflowState(version.definition),
        executionMetadata: { trigger: row.trigger, startedAt: record.startedAt, endedAt: record.endedAt, totalDurationMs: row.duration_ms, cost: record.cost },
        limits: await service.limits.snapshot(access.billedAccount, access.plan),
      };
    });
  };
}

/**
 * The page of `rows` (fetched `limit + 1`): it ends at the limit, or before the first log the byte bound left
 * without its data (history-store.ts, LogFilter.large); the cursor then continues from its last log.
 */
function logPage(rows: LogRow[], limit: number, order: 'asc' | 'desc'): { data: LogRow[]; nextCursor?: string } {
  const cut = rows.findIndex((r, i) => i >= limit || !r.large);
  if (cut < 0) return { data: rows };
  const data = rows.slice(0, cut);
  const last = data[data.length - 1];
  return { data, nextCursor: encodeCursor({ t: last.created_at.toISOString(), id: last.id, ...(order === 'asc' ? { o: 'asc' as const } : {}) }) };
}
