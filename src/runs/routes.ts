import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { actorOf, type AccountsService } from '../accounts/service.js';
import type { AppContext } from '../context.js';
import { requireAuth } from '../http/auth.js';
import { HttpError } from '../http/errors.js';
import { acceptJsonWithAnyContentType } from '../http/json-body.js';
import { errorResponses, errorSchema } from '../http/schemas.js';
import { dailyUsage, workspaceAccountOf, workspaceIdParam } from '../limits/usage.js';
import type { WorkflowService } from '../workflows/service.js';
import { isAsyncRequest, refuseUnsupportedControls, requestedExecutionId, requestedTimeoutSeconds, workflowInput } from './execute-request.js';
import { executeAnswer } from './execute-response.js';
import { streamRun } from './execute-stream.js';
import { publicExecutionId, storedExecutionIds } from './execution-ids.js';
import { JobAnswers, sendJsonBytes } from './job-status.js';
import type { ExecutionService } from './service.js';
import { v2RunRoutes } from './v2-routes.js';

const executeBody = z
  .object({
    inputs: z.record(z.string(), z.unknown()).optional().describe('Workflow input fields (top-level fields are accepted too)'),
    async: z.boolean().optional().describe('Queue the run and answer 202 with a job (same as X-Execution-Mode: async)'),
    executionId: z.string().optional().describe('Caller-chosen execution id (same as the X-Execution-Id header)'),
    stream: z.boolean().optional().describe('Answer with server-sent events: selected block outputs as they are produced, then the final result (same as X-Stream-Response: true)'),
    selectedOutputs: z.array(z.string().min(1).max(512)).max(100).optional()
      .describe('Block outputs to stream (a JSON answer is not shaped by them): <blockName>.<path>, <blockId>.<path>, <blockId>_<path> or a block id'),
    useDraftState: z.boolean().optional()
      .describe('true: run the saved draft instead of the deployed version (write role; sync only). Not a deployment: logged with trigger "manual", billed like any run; an invalid draft answers 400 as deploy does'),
  })
  .catchall(z.unknown());


/** The legacy execute route: the one route pages on other origins may call (src/http/cross-origin.ts). */
export const LEGACY_EXECUTE_PATH = '/api/workflows/:workflowId/execute';

export function runRoutes(service: ExecutionService, workflows: WorkflowService, accounts: AccountsService): FastifyPluginAsyncZod<{ ctx: AppContext }> {
  return async (app, { ctx }) => {
    const { db } = ctx;
    const jobs = new JobAnswers(db);
    acceptJsonWithAnyContentType(app);

    app.post(LEGACY_EXECUTE_PATH, {
      config: { errorFamily: 'execute', rateLimitHeaders: false, workflowAnswer: true, crossOrigin: true },
      schema: {
        tags: ['execution'],
        summary: 'Run the deployed workflow (or, with useDraftState, the saved draft): synchronously, or asynchronously as a job (async: true or X-Execution-Mode: async)',
        description: 'Pages on other origins may call it with a key (CORS: any origin unless WEFT_EXECUTE_CORS_ORIGINS narrows it; never with credentials). The preflight (OPTIONS) needs no key.',
        params: z.object({ workflowId: z.string().min(1).max(128) }),
        headers: z.object({
          'x-execution-mode': z.string().optional(),
          'x-execution-timeout-seconds': z.string().optional().describe('Async only: the run\'s timeout in seconds (1 to 604800), capped by the plan\'s'),
          'x-execution-id': z.string().optional(),
          'idempotency-key': z.string().optional(),
          'x-stream-response': z.string().optional(),
        }).passthrough(),
        body: executeBody.optional(),
        response: {
          200: z.unknown().describe('Sync result {success, executionId, output, limits, metadata}, the body of a Response block, or (stream) text/event-stream'),
          202: z.object({
            success: z.literal(true), async: z.literal(true), jobId: z.string(), executionId: z.string(), message: z.string(), statusUrl: z.string(),
            taskId: z.string().describe('The jobId again, as Sim\'s TypeScript SDK 0.1.x types the answer (AsyncExecutionResult)'),
            status: z.literal('queued'), createdAt: z.string(), links: z.object({ status: z.string() }),
          }),
          ...errorResponses,
          402: errorSchema,
          408: errorSchema,
          409: errorSchema,
          413: errorSchema.describe('useDraftState: the saved draft is over WEFT_MAX_DEFINITION_BYTES of JSON'),
          429: errorSchema,
          499: errorSchema,
          500: errorSchema,
        },
      },
    }, async (request, reply) => {
      const body = (request.body ?? {}) as Record<string, unknown>;
      const executionId = requestedExecutionId(request.headers, body);
      const isAsync = isAsyncRequest(request.headers, body);
      refuseUnsupportedControls(body, isAsync);
      const timeoutSeconds = requestedTimeoutSeconds(request.headers, isAsync);
      const selected = Array.isArray(body.selectedOutputs) ? (body.selectedOutputs as string[]) : [];
      if (isAsync && selected.length > 0) throw new HttpError(400, 'Async execution does not support draft or override execution controls');
      const isStream = !isAsync && (body.stream === true || String(request.headers['x-stream-response'] ?? '').toLowerCase() === 'true');
      const useDraft = body.useDraftState === true;
      if (useDraft && isAsync) throw new HttpError(400, 'Async execution does not support draft or override execution controls');
      // A draft run needs write access and reads the workflow fresh (the saved draft, not a cached row).
      const { access, workflow } = await workflows.forCaller(request.auth, request.params.workflowId, useDraft ? 'write' : 'read', { forRun: !useDraft });
      const run = { workspaceId: access.workspaceId, billedAccount: access.billedAccount, plan: access.plan };
      // The draft, checked like a deploy, passes the same door as a deployed run.
      const admitted = await service.admit(workflow, run, isAsync ? 'async' : 'sync', { executionId, draftBy: useDraft ? actorOf(access) : undefined });
      const input = workflowInput(body);
      const links = baseUrl(ctx, request);

      if (isAsync) {
        const id = await service.enqueue(admitted, run, input, { executionId, apiKeyId: access.keyId, trigger: 'api', baseUrl: links, timeoutSeconds });
        const jobId = `job_${id}`;
        const statusUrl = `${links}/api/jobs/${jobId}`;
        return reply.code(202).send({
          success: true as const, async: true as const, jobId, executionId: id, message: 'Workflow execution queued', statusUrl,
          // What older clients (Sim's TypeScript SDK 0.1.x, AsyncExecutionResult) read.
          taskId: jobId, status: 'queued' as const, createdAt: new Date().toISOString(), links: { status: statusUrl },
        });
      }

      const selectors = await service.outputSelectors(admitted, selected);
      const startOpts = { executionId, apiKeyId: access.keyId, trigger: useDraft ? 'manual' : 'api', baseUrl: links };
      if (isStream) {
        // The stream's frames do not carry the run's id: the header tells it (logs, cancel), as Sim's does.
        reply.header('x-execution-id', publicExecutionId(admitted.executionId));
        return streamRun(request, reply, selectors, (onBlock, signal) => service.runSync(admitted, run, input, { ...startOpts, signal, onBlock, streamed: true }));
      }

      const abort = new AbortController();
      const onClose = () => {
        if (!reply.sent) abort.abort(new Error('Client cancelled request'));
      };
      request.raw.socket?.once('close', onClose);
      try {
        // selectedOutputs shapes a stream only: the JSON answer is the run's whole output, as in the reference
        // service (Sim's Python SDK sends selected_outputs without a stream and reads the output as usual).
        const { executionId: id, result, output, periodCostUsd } = await service.runSync(admitted, run, input, { ...startOpts, signal: abort.signal });
        const answer = await executeAnswer(id, result, output, () => service.limits.snapshot(run.billedAccount, run.plan, periodCostUsd));
        if (answer.kind === 'response') {
          reply.code(answer.status as 200).header('content-type', 'application/json; charset=utf-8');
          // executeAnswer already kept only the allow-listed headers of the Response block.
          for (const [k, v] of Object.entries(answer.headers)) reply.header(k, v);
          return reply.send(JSON.stringify(answer.data));
        }
        return reply.code(answer.status as 200).send(answer.body);
      } finally {
        request.raw.socket?.off('close', onClose);
      }
    });

    app.get('/api/jobs/:jobId', {
      config: { errorFamily: 'coded', rateLimitHeaders: false },
      schema: {
        tags: ['execution'], summary: 'Status of an async run',
        params: z.object({ jobId: z.string().min(1).max(200) }),
        response: {
          200: z.object({
            success: z.literal(true), taskId: z.string(), status: z.enum(['queued', 'processing', 'completed', 'failed', 'cancelled']),
            metadata: z.object({
              workflowId: z.string(), executionId: z.string(), createdAt: z.string(), startedAt: z.string().nullable(),
              completedAt: z.string().nullable(), duration: z.number().nullable(),
            }),
            output: z.unknown().optional(), error: z.string().optional(), estimatedDuration: z.number().optional(),
            paused: z.boolean().optional().describe('The run waits for a person; `pause` holds its form and resume links'),
            pause: z.unknown().optional(),
          }),
          401: errorSchema, 404: errorSchema,
        },
      },
    }, async (request, reply) => {
      const { jobId } = request.params;
      const executionId = jobId.startsWith('job_') ? jobId.slice(4) : jobId;
      const { workspaceIds } = await accounts.billedAccount(requireAuth(request));
      const row = await jobs.find(storedExecutionIds(executionId, workspaceIds));
      if (!row || row.mode !== 'async') throw new HttpError(404, 'Task not found');
      await accounts.authorize(request.auth, row.workspace_id, 'read', { conceal: true, notFoundMessage: 'Task not found' });
      // JSON bytes with the output placed in as the database keeps it (runs/job-status.ts): sent as they are.
      return sendJsonBytes(reply, await jobs.answer(jobId, row));
    });

    // Sim's v2 run API: a second surface over the same service.
    await app.register(v2RunRoutes(service, workflows, accounts), { prefix: '/api/v2', ctx });

    // Usage per day, beside the logs the dashboard reads with it. It reads usage events from the database,
    // which limitRoutes is not handed (it belongs there once the composition root passes it the database).
    app.get('/api/v1/usage/daily', {
      schema: {
        tags: ['limits'],
        summary: "Cost and charged runs per UTC day of the caller's billed account in a workspace (or, with account=workspace, of the workspace's), oldest first",
        querystring: z.object({
          workspaceId: workspaceIdParam,
          days: z.coerce.number().int().min(1).max(366).default(30).describe('Days ending today (UTC), 1 to 366'),
          account: z.enum(['caller', 'workspace']).default('caller').describe(
            "caller: the caller's billed account there (a workspace key's: the workspace; a personal key's: its user). workspace: the workspace's own account (its admins and keys)",
          ),
        }),
        response: {
          200: z.object({
            account: z.string().describe('The billed account reported'),
            data: z.array(z.object({
              date: z.string().describe('YYYY-MM-DD (UTC)'),
              costUsd: z.number().describe('Run base charges and model usage recorded that day'),
              runs: z.number().int().describe('Runs charged that day'),
            })),
          }),
          ...errorResponses,
        },
      },
    }, async (request) => {
      const q = request.query;
      const account = q.account === 'workspace'
        ? (await workspaceAccountOf(accounts, request.auth, q.workspaceId)).account
        : (await accounts.authorize(request.auth, q.workspaceId, 'read', { conceal: true })).billedAccount;
      return { account, data: await dailyUsage(db, account, q.days, new Date()) };
    });
  };
}

/** Absolute base URL for links: WEFT_BASE_URL, else the request's own host. */
export function baseUrl(ctx: AppContext, request: { protocol: string; host: string }): string {
  return ctx.config.baseUrl ?? `${request.protocol}://${request.host}`;
}
