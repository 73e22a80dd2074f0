import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { AppContext } from '../context.js';
import { HttpError } from '../http/errors.js';
import { errorResponses, errorSchema } from '../http/schemas.js';
import { accessWorkflow } from '../workflows/routes.js';
import type { PauseService } from './pauses.js';
import { baseUrl } from './routes.js';
import type { ExecutionService } from './service.js';
import * as store from './store.js';
import { formsPage, keyPage, resultPage } from './resume-page.js';
import type { FastifyRequest } from 'fastify';

const pathParams = z.object({ workflowId: z.string().min(1).max(128), executionId: z.string().min(1).max(128) });
const pointParams = pathParams.extend({ contextId: z.string().min(1).max(512) });

/** Paused executions: look them up, resume a pause point, and a small page a person can answer from. */
export function resumeRoutes(pauses: PauseService, executions: ExecutionService): FastifyPluginAsyncZod<{ ctx: AppContext }> {
  return async (app, { ctx }) => {
    const load = async (workspaceId: string, workflowId: string, executionId: string) => {
      const row = await pauses.find(workspaceId, workflowId, executionId);
      if (!row) throw new HttpError(404, 'Paused execution not found');
      return row;
    };

    app.get('/api/resume/:workflowId/:executionId', {
      schema: {
        tags: ['execution'], summary: 'The paused execution record (flat, no envelope)', params: pathParams,
        response: { 200: z.record(z.string(), z.unknown()), ...errorResponses },
      },
    }, async (request) => {
      const { access } = await accessWorkflow(ctx, request, request.params.workflowId, 'read');
      return pauses.record(await load(access.workspaceId, request.params.workflowId, request.params.executionId));
    });

    app.get('/api/resume/:workflowId/:executionId/:contextId', {
      schema: {
        tags: ['execution'], summary: 'One pause point of a paused execution', params: pointParams,
        response: {
          200: z.object({ execution: z.record(z.string(), z.unknown()), pausePoint: z.record(z.string(), z.unknown()), queue: z.array(z.unknown()), activeResumeEntry: z.unknown().nullable() }),
          ...errorResponses,
        },
      },
    }, async (request) => {
      const { access } = await accessWorkflow(ctx, request, request.params.workflowId, 'read');
      const record = await pauses.record(await load(access.workspaceId, request.params.workflowId, request.params.executionId));
      const points = record.pausePoints as { contextId: string }[];
      const point = points.find((p) => p.contextId === request.params.contextId);
      if (!point) throw new HttpError(404, 'Pause context not found');
      const queue = record.queue as { contextId: string; status: string }[];
      const active = queue.filter((e) => e.contextId === request.params.contextId && (e.status === 'claimed' || e.status === 'pending')).pop();
      return { execution: record, pausePoint: point, queue, activeResumeEntry: active ?? null };
    });

    app.post('/api/resume/:workflowId/:executionId/:contextId', {
      schema: {
        tags: ['execution'],
        summary: 'Resume a pause point with the form input ({input: {...}}); answers like the original run (sync result, or 202 with a job)',
        params: pointParams,
        body: z.object({ input: z.record(z.string(), z.unknown()).optional() }).catchall(z.unknown()).optional(),
        response: { 200: z.record(z.string(), z.unknown()), 202: z.record(z.string(), z.unknown()), ...errorResponses, 409: errorSchema },
      },
    }, async (request, reply) => {
      const { workflowId, executionId, contextId } = request.params;
      const { access } = await accessWorkflow(ctx, request, workflowId, 'write');
      const body = request.body as Record<string, unknown> | undefined;
      const input = body && 'input' in body ? body.input : body ?? {};
      const { entry, paused, queuePosition } = await pauses.enqueueResume(access.workspaceId, workflowId, executionId, contextId, input);
      if (queuePosition !== null) {
        return reply.code(200).send({
          status: 'queued', executionId: entry.new_execution_id, queuePosition,
          message: 'Resume queued. It will run after current resumes finish.',
        });
      }
      if (paused.mode === 'async') {
        const id = await pauses.enqueueEntryJob(paused, entry);
        const jobId = `job_${id}`;
        return reply.code(202).send({
          success: true, async: true, jobId, executionId: id, message: 'Resume execution queued',
          statusUrl: `${baseUrl(ctx, request)}/api/jobs/${jobId}`,
        });
      }
      const abort = new AbortController();
      const { result, output } = await pauses.runEntry(entry.id, { signal: abort.signal });
      await store.insertFinished(executions.db, {
        id: entry.new_execution_id, workspaceId: access.workspaceId, workflowId, versionId: paused.version_id, mode: 'sync',
        trigger: 'resume', status: 'processing', billedAccount: paused.billed_account, apiKeyId: access.keyId, input: {},
      }, {
        status: result.status === 'completed' ? 'completed' : result.status === 'paused' ? 'paused' : 'failed',
        output, error: result.error?.message ?? null, errorBlock: result.error?.blockId ?? null, trace: result.trace,
        startedAt: new Date(result.startedAt), endedAt: new Date(result.endedAt), durationMs: result.durationMs,
      });
      await executions.limits.chargeRun(paused.billed_account, entry.new_execution_id);
      return reply.code(200).send({
        success: result.status === 'completed' || result.status === 'paused',
        status: result.status === 'timed_out' ? 'failed' : result.status,
        executionId: entry.new_execution_id,
        output: result.response ? result.response.data : output,
        ...(result.error ? { error: result.error.message } : {}),
        metadata: { duration: result.durationMs, startTime: result.startedAt, endTime: result.endedAt },
      });
    });

    // The page for people: server-rendered forms; the API key travels in the form body, never in a URL or cookie.
    const csp = "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'";
    const html = (reply: { header: (k: string, v: string) => unknown; type: (t: string) => { send: (b: string) => unknown } }, body: string) => {
      reply.header('content-security-policy', csp);
      return reply.type('text/html; charset=utf-8').send(body);
    };
    const formAuth = async (request: FastifyRequest, workflowId: string, role: 'read' | 'write') => {
      const key = (request.body as Record<string, unknown> | undefined)?.apiKey;
      const auth = typeof key === 'string' ? await ctx.keys.authenticate(key) : undefined;
      if (!auth) throw new HttpError(401, 'That API key is not valid.');
      request.auth = auth;
      return { ...(await accessWorkflow(ctx, request, workflowId, role)), key: key as string };
    };
    await app.register(async (page) => {
      page.addContentTypeParser('application/x-www-form-urlencoded', { parseAs: 'string' }, (_req, body, done) => {
        done(null, Object.fromEntries(new URLSearchParams(body as string)));
      });
      page.setErrorHandler((err, request, reply) => {
        const { workflowId, executionId } = request.params as { workflowId: string; executionId: string };
        const status = err instanceof HttpError ? err.status : 500;
        if (status >= 500) request.log.error({ err }, 'resume page failed');
        reply.code(status);
        const message = err instanceof Error ? err.message : String(err);
        return html(reply, status === 401 ? keyPage(workflowId, executionId, message) : resultPage('Could not resume', status >= 500 ? 'Internal error' : message, false));
      });
      page.get('/resume/:workflowId/:executionId', { schema: { hide: true, params: pathParams }, config: { auth: 'none' } }, async (request, reply) => {
        const { workflowId, executionId } = request.params as z.infer<typeof pathParams>;
        return html(reply, keyPage(workflowId, executionId));
      });
      page.post('/resume/:workflowId/:executionId', { schema: { hide: true, params: pathParams }, config: { auth: 'none' } }, async (request, reply) => {
        const { workflowId, executionId } = request.params as z.infer<typeof pathParams>;
        const { access, key } = await formAuth(request, workflowId, 'read');
        const record = await pauses.record(await load(access.workspaceId, workflowId, executionId));
        return html(reply, formsPage(workflowId, executionId, record.pausePoints as { contextId: string; resumeStatus: string; response: unknown }[], key));
      });
      page.post('/resume/:workflowId/:executionId/:contextId', { schema: { hide: true, params: pointParams }, config: { auth: 'none' } }, async (request, reply) => {
        const { workflowId, executionId, contextId } = request.params as z.infer<typeof pointParams>;
        const { access } = await formAuth(request, workflowId, 'write');
        const { apiKey: _k, ...input } = request.body as Record<string, string>;
        const submitted = Object.fromEntries(Object.entries(input).filter(([, v]) => v !== ''));
        const { entry, paused, queuePosition } = await pauses.enqueueResume(access.workspaceId, workflowId, executionId, contextId, submitted);
        if (queuePosition !== null) return html(reply, resultPage('Answer received', `Queued behind another answer (position ${queuePosition}).`, true));
        if (paused.mode === 'async') {
          await pauses.enqueueEntryJob(paused, entry);
          return html(reply, resultPage('Answer received', 'The run continues in the background.', true));
        }
        const { result, output } = await pauses.runEntry(entry.id, { signal: new AbortController().signal });
        const ok = result.status === 'completed' || result.status === 'paused';
        return html(reply, resultPage(ok ? 'Answer received' : 'The run failed', ok ? `The run is ${result.status}.` : result.error?.message ?? 'Failed', ok, output));
      });
    });
  };
}
