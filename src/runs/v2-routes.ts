// Sim's v2 workflow run API under /api/v2 (reference/sim-v2-api.md): execute (sync, async, stream),
// list runs, read a run, cancel and resume. A second surface over the same ExecutionService as the
// legacy execute routes, with Sim's envelopes ({data}; errors {error: {code, message, details?}}, the
// `v2` error family), per-operation request buckets with their X-RateLimit-* headers, and
// `Cache-Control: private, no-store`.
import { createHash } from 'node:crypto';
import type { FastifyRequest } from 'fastify';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { AccountsService } from '../accounts/service.js';
import type { AppContext } from '../context.js';
import { HttpError } from '../http/errors.js';
import { queryFlag } from '../http/query-params.js';
import { rateHeaders } from '../limits/service.js';
import type { WorkflowService } from '../workflows/service.js';
import { streamRun } from './execute-stream.js';
import { idSelectors } from './output-selection.js';
import { checkResumeInputSize, resumeInputCap } from './resume-input.js';
import { finishedRunData, queuedResumeResource, runListItem, runResource, storedStatuses } from './run-resource.js';
import type { ExecutionService } from './service.js';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** The v2 operation whose request bucket a route spends (Sim's operation ids). */
    v2Operation?: string;
  }
}

const runIdPattern = /^[A-Za-z0-9._:-]{1,128}$/;
const isoUtc = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?Z$/;
const MAX_CALL_CHAIN = 25;

const workflowParams = z.object({ id: z.string().min(1).max(128) });
const runParams = workflowParams.extend({ runId: z.string().regex(runIdPattern, 'runId must be 1 to 128 characters of A-Z a-z 0-9 . _ : -') });

const errorEnvelope = z.object({
  error: z.object({ code: z.string(), message: z.string(), details: z.unknown().optional() }),
}).describe('v2 error');
const errors = Object.fromEntries([400, 401, 402, 403, 404, 409, 413, 429, 499, 500, 503].map((s) => [s, errorEnvelope]));

const runErrorSchema = z.object({
  message: z.string(), code: z.string(), blockId: z.string().optional(), blockName: z.string().optional(), blockType: z.string().optional(),
});
const finishedRunSchema = z.object({
  runId: z.string(), workflowId: z.string(), status: z.enum(['completed', 'failed', 'paused', 'cancelled']),
  output: z.unknown(), error: runErrorSchema.nullable(),
  startedAt: z.string().optional(), endedAt: z.string().optional(), durationMs: z.number().optional(),
});
const queuedRunSchema = z.object({ runId: z.string(), statusUrl: z.string(), queuePosition: z.number().int().optional() });
const costSchema = z.object({ total: z.number() }).nullable()
  .describe('What the run cost in USD (Weft\'s credits are dollars): its base charge plus the model usage of its agent, router and evaluator blocks; null while nothing is recorded');
const listItemSchema = z.object({
  runId: z.string(), workflowId: z.string(), status: z.string(), trigger: z.string(), startedAt: z.string(),
  endedAt: z.string().nullable(), durationMs: z.number().nullable(), cost: costSchema,
});
const runSchema = listItemSchema.extend({
  paused: z.object({
    contextId: z.string().nullable(), pausedAt: z.string(), resumeAt: z.string().nullable(), pauseKind: z.enum(['time', 'human']).nullable(),
    blockedOnBlockId: z.string().nullable(), automaticResumeWaitingReason: z.string().nullable(),
    pausePointCount: z.number().int(), resumedCount: z.number().int(),
  }).nullable(),
  error: z.object({ message: z.string(), code: z.string() }).nullable(),
  output: z.unknown(),
  blockOutputs: z.record(z.string(), z.unknown()).nullable(),
});

const executeBody = z.object({
  input: z.record(z.string(), z.unknown()).optional().describe('Workflow input, keyed by the start block\'s input field names'),
  async: z.boolean().optional().describe('Queue the run and answer 202 with its runId and statusUrl'),
  executionTimeoutSeconds: z.number().int().min(1).max(604_800).optional().describe('Async only; capped by the plan\'s async timeout'),
  stream: z.boolean().optional().describe('Answer with server-sent events (selected block outputs as produced, then a final frame)'),
  selectedOutputs: z.array(z.string().min(1).max(512)).max(100).optional().describe('<blockName>.<path>, <blockId>.<path>, <blockId>_<path> or a block id: what the stream sends'),
  includeThinking: z.boolean().optional(),
  includeToolCalls: z.boolean().optional(),
  includeFileBase64: z.boolean().optional(),
  base64MaxBytes: z.number().int().min(1).max(10_485_760).optional(),
}).strict();

function utcDate(name: string, value: string | undefined): string | undefined {
  if (value === undefined) return undefined;
  if (!isoUtc.test(value) || value.startsWith('0000') || Number.isNaN(Date.parse(value))) {
    throw new HttpError(400, `${name} must be a UTC ISO 8601 timestamp ending in Z, e.g. 2026-01-31T12:00:00Z`);
  }
  return value;
}

const invalidCursor = () => new HttpError(400, 'cursor is not a valid pagination cursor. Restart pagination without a cursor.');

/** Keyset cursors bound to the list's filters: replaying one after changing a filter is a 400. */
function decodeRunCursor(cursor: string | undefined, binding: string): { t: string; id: string } | undefined {
  if (cursor === undefined) return undefined;
  let v: unknown;
  try {
    v = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
  } catch {
    throw invalidCursor();
  }
  const c = v as { t?: unknown; id?: unknown; f?: unknown };
  if (!c || typeof c !== 'object' || typeof c.t !== 'string' || typeof c.id !== 'string' || typeof c.f !== 'string' || Number.isNaN(Date.parse(c.t))) {
    throw invalidCursor();
  }
  if (c.f !== binding) throw new HttpError(400, 'cursor does not match the requested filters. Restart pagination without a cursor after changing a filter.');
  return { t: c.t, id: c.id };
}

const header = (request: FastifyRequest, name: string): string | undefined => {
  const v = request.headers[name];
  return Array.isArray(v) ? v[0] : v;
};

/** The stream protocol a client may ask for (X-Sim-Stream-Protocol); a stream that honours it names it back. */
const AGENT_EVENTS = 'agent-events-v1';
const negotiatedAgentEvents = (request: FastifyRequest): boolean =>
  (header(request, 'x-sim-stream-protocol') ?? '').split(',').some((p) => p.trim() === AGENT_EVENTS);

/** The v2 run API, registered under /api/v2 by the legacy run routes' plugin. */
export function v2RunRoutes(service: ExecutionService, workflows: WorkflowService, accounts: AccountsService): FastifyPluginAsyncZod<{ ctx: AppContext }> {
  return async (app, { ctx }) => {
    const base = (request: { protocol: string; host: string }) => ctx.config.baseUrl ?? `${request.protocol}://${request.host}`;
    const runUrl = (request: FastifyRequest, workflowId: string, runId: string) =>
      `${base(request)}/api/v2/workflows/${workflowId}/runs/${encodeURIComponent(runId)}`;

    app.addHook('onRequest', async (_request, reply) => {
      reply.header('cache-control', 'private, no-store');
    });

    // After auth: the operation's request bucket (its headers on every answer, 429 included), then
    // Sim's query rules (no empty values, no repeats) before schema validation.
    app.addHook('preValidation', async (request, reply) => {
      const op = request.routeOptions.config?.v2Operation;
      if (op && request.auth) {
        const { account, plan } = await accounts.billedAccount(request.auth);
        try {
          const state = await service.limits.admitOperation(`${request.auth.keyId}:${account}`, plan, op);
          for (const [k, v] of Object.entries(rateHeaders(state))) reply.header(k, v);
        } catch (err) {
          if (err instanceof HttpError) for (const [k, v] of Object.entries(err.headers)) reply.header(k, v);
          throw err;
        }
      }
      for (const [name, value] of Object.entries((request.query ?? {}) as Record<string, unknown>)) {
        if (Array.isArray(value)) throw new HttpError(400, `${name} was sent ${value.length} times; send it at most once`);
        if (typeof value === 'string' && value.trim() === '') throw new HttpError(400, `${name} cannot be empty; omit the parameter instead`);
      }
    });

    app.post('/workflows/:id/execute', {
      config: { errorFamily: 'v2', v2Operation: 'workflows.execute' },
      schema: {
        tags: ['v2'],
        summary: 'Run the deployed workflow (Sim v2): sync 200 {data: run}, async 202 {data: {runId, statusUrl}}, or a stream',
        description: 'Run failures are in band: 200 with status "failed" and error {message, code}. Optional X-Run-Id claims the run id (a reuse is 409 RUN_ID_CONFLICT).',
        params: workflowParams,
        querystring: z.object({}).strict(),
        headers: z.object({ 'x-run-id': z.string().optional(), 'x-sim-via': z.string().optional() }).passthrough(),
        body: executeBody,
        response: { 200: z.object({ data: finishedRunSchema }).describe('Sync result, or text/event-stream when stream is true'), 202: z.object({ data: queuedRunSchema }), ...errors },
      },
    }, async (request, reply) => {
      const body = request.body;
      const isAsync = body.async === true;
      if (isAsync && body.stream) throw new HttpError(400, 'async and stream cannot be combined');
      if (isAsync && ((body.selectedOutputs?.length ?? 0) > 0 || body.includeThinking || body.includeToolCalls
        || body.includeFileBase64 !== undefined || body.base64MaxBytes !== undefined)) {
        throw new HttpError(400, 'Async execution does not support streaming or output-shaping options');
      }
      if (body.executionTimeoutSeconds !== undefined && !isAsync) throw new HttpError(400, 'executionTimeoutSeconds is supported only for async execution');
      if ((body.includeThinking || body.includeToolCalls) && !body.stream) throw new HttpError(400, 'includeThinking and includeToolCalls require stream: true');
      if ((body.includeThinking || body.includeToolCalls) && !negotiatedAgentEvents(request)) {
        throw new HttpError(400, 'includeThinking and includeToolCalls require the X-Sim-Stream-Protocol: agent-events-v1 header');
      }
      const runId = header(request, 'x-run-id');
      if (runId !== undefined && !runIdPattern.test(runId)) throw new HttpError(400, 'X-Run-Id must be 1 to 128 characters of A-Z a-z 0-9 . _ : -');
      const via = header(request, 'x-sim-via');
      if (via && via.split(',').filter((s) => s.trim()).length >= MAX_CALL_CHAIN) {
        throw new HttpError(409, `Maximum workflow call chain depth (${MAX_CALL_CHAIN}) exceeded.`, { v2Details: { code: 'CALL_CHAIN_DEPTH_EXCEEDED' } });
      }

      const { access, workflow } = await workflows.forCaller(request.auth, request.params.id, 'read', { forRun: true });
      const run = { workspaceId: access.workspaceId, billedAccount: access.billedAccount, plan: access.plan };
      const input = body.input ?? {};
      const start = { executionId: runId, apiKeyId: access.keyId, trigger: 'api', baseUrl: base(request) };
      try {
        const admitted = await service.admit(workflow, run, isAsync ? 'async' : 'sync', { executionId: runId });
        if (isAsync) {
          const id = await service.enqueue(admitted, run, input, { ...start, timeoutSeconds: body.executionTimeoutSeconds });
          return reply.code(202).header('x-run-id', id).send({ data: { runId: id, statusUrl: runUrl(request, workflow.id, id) } });
        }
        if (body.stream) {
          const selectors = await service.outputSelectors(admitted, body.selectedOutputs);
          if (negotiatedAgentEvents(request)) reply.header('x-sim-stream-protocol', AGENT_EVENTS);
          return streamRun(request, reply, selectors, (onBlock, signal) => service.runSync(admitted, run, input, { ...start, signal, onBlock, streamed: true }));
        }
        const abort = new AbortController();
        const onClose = () => {
          if (!reply.sent) abort.abort(new Error('Client cancelled request'));
        };
        request.raw.socket?.once('close', onClose);
        try {
          const { executionId, result, output } = await service.runSync(admitted, run, input, { ...start, signal: abort.signal });
          if (abort.signal.aborted && result.status === 'cancelled') {
            throw new HttpError(499, 'Client cancelled request', { v2Details: { runId: executionId } });
          }
          const v2Output = result.response ?? output;
          return reply.header('x-run-id', executionId).send({ data: finishedRunData(workflow.id, executionId, result, v2Output) });
        } finally {
          request.raw.socket?.off('close', onClose);
        }
      } catch (err) {
        if (err instanceof HttpError && err.extra.code === 'EXECUTION_ID_CONFLICT') {
          const id = err.extra.executionId ?? runId ?? '';
          throw new HttpError(409, 'Run ID has already been used', { v2Details: { code: 'RUN_ID_CONFLICT', runId: id } }, { 'X-Run-Id': id });
        }
        throw err;
      }
    });

    app.get('/workflows/:id/runs', {
      config: { errorFamily: 'v2', v2Operation: 'workflows.runs.list' },
      schema: {
        tags: ['v2'], summary: 'Runs of a workflow by start time, with cursor pagination (Sim v2)',
        params: workflowParams,
        querystring: z.object({
          status: z.enum(['pending', 'running', 'completed', 'failed', 'cancelled', 'paused']).optional(),
          trigger: z.string().min(1).max(100).optional(),
          startDate: z.string().max(40).optional().describe('UTC ISO 8601 ending in Z; inclusive; applies to run start time'),
          endDate: z.string().max(40).optional(),
          limit: z.coerce.number().int().min(1).max(100).default(50),
          cursor: z.string().min(1).max(1024).optional(),
          order: z.enum(['asc', 'desc']).default('desc'),
        }).strict(),
        response: { 200: z.object({ data: z.array(listItemSchema), nextCursor: z.string().nullable() }), ...errors },
      },
    }, async (request) => {
      const q = request.query;
      const startDate = utcDate('startDate', q.startDate);
      const endDate = utcDate('endDate', q.endDate);
      if (startDate && endDate && Date.parse(startDate) > Date.parse(endDate)) throw new HttpError(400, 'startDate must be before or equal to endDate');
      const binding = createHash('sha256')
        .update(JSON.stringify([request.params.id, q.status ?? null, q.trigger ?? null, startDate ?? null, endDate ?? null, q.order]))
        .digest('base64url').slice(0, 16);
      const after = decodeRunCursor(q.cursor, binding);
      const { access } = await workflows.forCaller(request.auth, request.params.id, 'read');
      const rows = await service.listRuns({
        workspaceId: access.workspaceId, workflowId: request.params.id, statuses: q.status ? [storedStatuses[q.status] as string] : undefined,
        trigger: q.trigger, startDate, endDate, order: q.order, limit: q.limit + 1, after,
      });
      const page = rows.slice(0, q.limit);
      const last = page[page.length - 1];
      const nextCursor = rows.length > q.limit && last
        ? Buffer.from(JSON.stringify({ t: last.started.toISOString(), id: last.id, f: binding })).toString('base64url')
        : null;
      const costs = await service.limits.runCosts(page.map((r) => r.id));
      return { data: page.map((r) => runListItem(r, costs.get(r.id)?.total)), nextCursor };
    });

    app.get('/workflows/:id/runs/:runId', {
      config: { errorFamily: 'v2', v2Operation: 'workflows.runs.read' },
      schema: {
        tags: ['v2'], summary: 'A run (Sim v2): status, timing, pause, cost, error; output with includeOutput=true once completed',
        params: runParams,
        querystring: z.object({
          includeOutput: z.string().max(10).optional().describe('true/false/1/0 (default false)'),
          selectedOutputs: z.string().max(4000).optional().describe('Comma-separated blockId or blockId.path: fills blockOutputs'),
        }).strict(),
        response: { 200: z.object({ data: runSchema }), ...errors },
      },
    }, async (request) => {
      const includeOutput = queryFlag('includeOutput', request.query.includeOutput) ?? false;
      const selected = request.query.selectedOutputs?.split(',').map((s) => s.trim()).filter(Boolean);
      const { id, runId } = request.params;
      const { access } = await workflows.forCaller(request.auth, id, 'read', {}).catch(concealAsRun);
      // Only what the answer holds: the output when asked for, the trace for selected block outputs.
      const row = await service.findRun(access.workspaceId, id, runId, { input: false, output: includeOutput, trace: selected !== undefined });
      if (!row) {
        const queued = await service.queuedResume(access.workspaceId, id, runId);
        if (queued) return { data: queuedResumeResource(queued, id) };
        throw new HttpError(404, 'Run not found');
      }
      const paused = row.status === 'paused' ? await service.pauses.find(access.workspaceId, id, runId) : undefined;
      const cost = (await service.limits.runCosts([row.id])).get(row.id)?.total;
      return { data: runResource(row, paused, cost, { includeOutput, selectors: selected ? idSelectors(selected) : undefined }) };
    });

    app.post('/workflows/:id/runs/:runId/cancel', {
      config: { errorFamily: 'v2', v2Operation: 'workflows.runs.cancel' },
      schema: {
        tags: ['v2'],
        summary: 'Cancel a run in any state (Sim v2): a queued run never starts, a running one stops and ends cancelled, a paused one is cancelled with its pause',
        params: runParams,
        querystring: z.object({}).strict(),
        response: {
          200: z.object({
            data: z.object({
              success: z.boolean(), runId: z.string(), redisAvailable: z.boolean(), durablyRecorded: z.boolean(),
              locallyAborted: z.boolean(), pausedCancelled: z.boolean(), reason: z.string(),
            }),
          }),
          ...errors,
        },
      },
    }, async (request) => {
      const { id, runId } = request.params;
      const { access } = await workflows.forCaller(request.auth, id, 'write').catch(concealAsRun);
      const row = await service.findRun(access.workspaceId, id, runId);
      if (!row) throw new HttpError(404, 'Run not found');
      const o = await service.cancel(row);
      // Cancellation is recorded in the database, which every process watches: Redis is not needed for
      // it, and `redisAvailable` reports whether the queue's Redis (if any) answers right now.
      const redisAvailable = await service.redisAvailable();
      return { data: { success: o.success, runId: o.runId, redisAvailable, durablyRecorded: o.durablyRecorded, locallyAborted: o.locallyAborted, pausedCancelled: o.pausedCancelled, reason: o.reason } };
    });

    app.post('/workflows/:id/runs/:runId/resume', {
      config: { errorFamily: 'v2', v2Operation: 'workflows.runs.resume' },
      schema: {
        tags: ['v2'],
        summary: 'Resume a paused run at a pause point (Sim v2): a new run id; 200 with the result when the paused run was sync, else 202',
        params: runParams,
        querystring: z.object({}).strict(),
        body: z.object({ contextId: z.string().min(1).max(512), input: z.unknown().optional() }).strict(),
        response: { 200: z.object({ data: finishedRunSchema }), 202: z.object({ data: queuedRunSchema }), ...errors },
      },
    }, async (request, reply) => {
      const { id, runId } = request.params;
      const { access } = await workflows.forCaller(request.auth, id, 'write').catch(concealAsRun);
      // Bounded before the resume is admitted; the pause's form is applied when the pause point is read.
      const input = request.body.input ?? {};
      checkResumeInputSize(input, resumeInputCap(ctx.config.maxBlockOutputBytes));
      const abort = new AbortController();
      const onClose = () => {
        if (!reply.sent) abort.abort(new Error('Client cancelled request'));
      };
      request.raw.socket?.once('close', onClose);
      try {
        const outcome = await service.resume(
          { workspaceId: access.workspaceId, workflowId: id, executionId: runId, contextId: request.body.contextId },
          input,
          // A run that answered as a stream resumes as a job here (202), as Sim's v2 API does.
          { apiKeyId: access.keyId, signal: abort.signal, streamedAsJob: true },
        );
        if (outcome.kind !== 'finished') {
          const data = { runId: outcome.executionId, statusUrl: runUrl(request, id, outcome.executionId),
            ...(outcome.kind === 'queued' ? { queuePosition: outcome.queuePosition } : {}) };
          return reply.code(202).header('x-run-id', outcome.executionId).send({ data });
        }
        return reply.header('x-run-id', outcome.executionId).send({ data: finishedRunData(id, outcome.executionId, outcome.result, outcome.output, false) });
      } finally {
        request.raw.socket?.off('close', onClose);
      }
    });
  };
}

/** On run routes a workflow the caller cannot see is a run that does not exist. */
function concealAsRun(err: unknown): never {
  if (err instanceof HttpError && err.status === 404) throw new HttpError(404, 'Run not found');
  throw err;
}
