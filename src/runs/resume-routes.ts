import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { FastifyRequest } from 'fastify';
import type { AccountsService } from '../accounts/service.js';
import type { AppContext } from '../context.js';
import { HttpError } from '../http/errors.js';
import { acceptJsonWithAnyContentType } from '../http/json-body.js';
import { errorResponses, errorSchema } from '../http/schemas.js';
import type { WorkflowService } from '../workflows/service.js';
import { streamRun } from './execute-stream.js';
import { formsPage, keyPage, resultPage } from './resume-page.js';
import { checkResumeInputSize, resumeInputCap } from './resume-input.js';
import { baseUrl } from './routes.js';
import type { ExecutionService } from './service.js';

const pathParams = z.object({ workflowId: z.string().min(1).max(128), executionId: z.string().min(1).max(128) });
const pointParams = pathParams.extend({ contextId: z.string().min(1).max(512) });

/** Paused executions: look them up, resume a pause point, and a small page a person can answer from. */
export function resumeRoutes(runs: ExecutionService, workflows: WorkflowService, accounts: AccountsService): FastifyPluginAsyncZod<{ ctx: AppContext }> {
  return async (app, { ctx }) => {
    const { pauses } = runs;
    acceptJsonWithAnyContentType(app);
    // Resume input is bounded before the resume is admitted (no charge reserved, no bucket token, no write);
    // the pause's form is applied where the pause point is read (validateSubmission, in the same transaction).
    const inputCap = resumeInputCap(ctx.config.maxBlockOutputBytes);
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
      const { access } = await workflows.forCaller(request.auth, request.params.workflowId, 'read');
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
      const { access } = await workflows.forCaller(request.auth, request.params.workflowId, 'read');
      const record = await pauses.record(await load(access.workspaceId, request.params.workflowId, request.params.executionId));
      const points = record.pausePoints as { contextId: string; response: { data: unknown } }[];
      const point = points.find((p) => p.contextId === request.params.contextId);
      if (!point) throw new HttpError(404, 'Pause context not found');
      const queue = record.queue as { contextId: string; status: string }[];
      const active = queue.filter((e) => e.contextId === request.params.contextId && (e.status === 'claimed' || e.status === 'pending')).pop();
      // As the reference: the execution's copy of each point leaves its form out (`response.data` empty); the
      // asked-for point carries it.
      const execution = { ...record, pausePoints: points.map((p) => ({ ...p, response: { ...p.response, data: {} } })) };
      return { execution, pausePoint: point, queue, activeResumeEntry: active ?? null };
    });

    app.post('/api/resume/:workflowId/:executionId/:contextId', {
      schema: {
        tags: ['execution'],
        summary: 'Resume a pause point with the form input ({input: {...}}); answers like the original run (sync result, a stream, or 202 with a job)',
        params: pointParams,
        body: z.object({ input: z.record(z.string(), z.unknown()).optional() }).catchall(z.unknown()).optional(),
        response: { 200: z.record(z.string(), z.unknown()), 202: z.record(z.string(), z.unknown()), ...errorResponses, 409: errorSchema },
      },
    }, async (request, reply) => {
      const { workflowId, executionId, contextId } = request.params;
      const { access } = await workflows.forCaller(request.auth, workflowId, 'write');
      const body = request.body as Record<string, unknown> | undefined;
      const input = body && 'input' in body ? body.input : body ?? {};
      checkResumeInputSize(input, inputCap);
      const abort = new AbortController();
      const outcome = await runs.resume({ workspaceId: access.workspaceId, workflowId, executionId, contextId }, input, { apiKeyId: access.keyId, signal: abort.signal });
      if (outcome.kind === 'queued') {
        return reply.code(200).send({
          status: 'queued', executionId: outcome.executionId, queuePosition: outcome.queuePosition,
          message: 'Resume queued. It will run after current resumes finish.',
        });
      }
      if (outcome.kind === 'job') {
        const jobId = `job_${outcome.executionId}`;
        return reply.code(202).send({
          success: true, async: true, jobId, executionId: outcome.executionId, message: 'Resume execution queued',
          statusUrl: `${baseUrl(ctx, request)}/api/jobs/${jobId}`,
        });
      }
      const { result, output } = outcome;
      if (outcome.streamed) {
        // The paused run answered as a stream, so its resume does (sim-api 5.4): the final frame, then [DONE].
        reply.header('x-execution-id', outcome.executionId);
        return streamRun(request, reply, [], async () => ({ result, output }));
      }
      return reply.code(200).send({
        success: result.status === 'completed' || result.status === 'paused',
        status: result.status === 'timed_out' ? 'failed' : result.status,
        executionId: outcome.executionId,
        output: result.response ? result.response.data : output,
        ...(result.error ? { error: result.error.message } : {}),
        metadata: { duration: result.durationMs, startTime: result.startedAt, endTime: result.endedAt },
      });
    });

    // The page for people: server-rendered forms; the API key travels in the form body, never in a URL or cookie.
    // The page may hold a key in a form field: never cached, never framed.
    const csp = "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'";
    const html = (reply: { header: (k: string, v: string) => unknown; type: (t: string) => { send: (b: string) => unknown } }, body: string) => {
      reply.header('content-security-policy', csp);
      reply.header('cache-control', 'no-store');
      reply.header('x-frame-options', 'DENY');
      reply.header('referrer-policy', 'no-referrer');
      return reply.type('text/html; charset=utf-8').send(body);
    };
    // The key typed into the first page is exchanged for a token scoped to this execution and valid for
    // 30 minutes; the forms carry the token, so the key itself is never written into a page.
    const tokenScope = (workflowId: string, executionId: string) => `resume:${workflowId}:${executionId}`;
    const formAuth = async (request: FastifyRequest, workflowId: string, executionId: string, role: 'read' | 'write') => {
      const body = (request.body ?? {}) as Record<string, unknown>;
      const auth = typeof body.token === 'string' ? await accounts.verifyScopedToken(body.token, tokenScope(workflowId, executionId))
        : typeof body.apiKey === 'string' ? await accounts.verifyKey(body.apiKey) : undefined;
      if (!auth) throw new HttpError(401, typeof body.token === 'string' ? 'This page has expired: enter the API key again.' : 'That API key is not valid.');
      request.auth = auth;
      return { ...(await workflows.forCaller(auth, workflowId, role)), auth };
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
        // A refusal's Retry-After (rate and concurrency limits) reaches the person's browser too.
        if (err instanceof HttpError && err.headers['Retry-After']) reply.header('retry-after', err.headers['Retry-After']);
        const message = err instanceof Error ? err.message : String(err);
        return html(reply, status === 401 ? keyPage(workflowId, executionId, message) : resultPage('Could not resume', status >= 500 ? 'Internal error' : message, false));
      });
      page.get('/resume/:workflowId/:executionId', { schema: { hide: true, params: pathParams }, config: { auth: 'none' } }, async (request, reply) => {
        const { workflowId, executionId } = request.params as z.infer<typeof pathParams>;
        return html(reply, keyPage(workflowId, executionId));
      });
      page.post('/resume/:workflowId/:executionId', { schema: { hide: true, params: pathParams }, config: { auth: 'none' } }, async (request, reply) => {
        const { workflowId, executionId } = request.params as z.infer<typeof pathParams>;
        const { access, auth } = await formAuth(request, workflowId, executionId, 'read');
        const record = await pauses.record(await load(access.workspaceId, workflowId, executionId));
        const token = await accounts.issueScopedToken(auth, tokenScope(workflowId, executionId), 30 * 60_000);
        return html(reply, formsPage(workflowId, executionId, record.pausePoints as { contextId: string; resumeStatus: string; response: unknown }[], token));
      });
      page.post('/resume/:workflowId/:executionId/:contextId', { schema: { hide: true, params: pointParams }, config: { auth: 'none' } }, async (request, reply) => {
        const { workflowId, executionId, contextId } = request.params as z.infer<typeof pointParams>;
        const { access } = await formAuth(request, workflowId, executionId, 'write');
        const { apiKey: _k, token: _t, ...input } = request.body as Record<string, string>;
        const submitted = Object.fromEntries(Object.entries(input).filter(([, v]) => v !== ''));
        checkResumeInputSize(submitted, inputCap);
        const outcome = await runs.resume({ workspaceId: access.workspaceId, workflowId, executionId, contextId }, submitted,
          { apiKeyId: access.keyId, signal: new AbortController().signal });
        if (outcome.kind === 'queued') return html(reply, resultPage('Answer received', `Queued behind another answer (position ${outcome.queuePosition}).`, true));
        if (outcome.kind === 'job') return html(reply, resultPage('Answer received', 'The run continues in the background.', true));
        const { result, output } = outcome;
        const ok = result.status === 'completed' || result.status === 'paused';
        return html(reply, resultPage(ok ? 'Answer received' : 'The run failed', ok ? `The run is ${result.status}.` : result.error?.message ?? 'Failed', ok, output));
      });
    });
  };
}
