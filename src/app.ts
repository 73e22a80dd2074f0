import { randomUUID } from 'node:crypto';
import Fastify, { type FastifyBaseLogger, type FastifyInstance } from 'fastify';
import cookie from '@fastify/cookie';
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import { serializerCompiler, validatorCompiler, type ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { Services } from './compose.js';
import type { AppContext } from './context.js';
import { registerErrorHandling } from './http/errors.js';
import { registerAuth } from './http/auth.js';
import { registerJsonParser } from './http/json-body.js';
import { registerWorkflowAnswerPolicy } from './http/workflow-answer.js';
import { registerPublicOrigin } from './http/public-origin.js';
import { registerCrossOrigin } from './http/cross-origin.js';
import { openapiTransforms } from './http/openapi.js';
import { accountRoutes } from './accounts/routes.js';
import { aiRoutes } from './ai/routes.js';
import { auditRoutes } from './audit/routes.js';
import { knowledgeRoutes } from './knowledge/routes.js';
import { mcpRoutes } from './mcp/routes.js';
import { limitRoutes, registerApiRateLimit } from './limits/routes.js';
import { resumeRoutes } from './runs/resume-routes.js';
import { logRoutes } from './runs/log-routes.js';
import { LEGACY_EXECUTE_PATH, runRoutes } from './runs/routes.js';
import { tableRoutes } from './tables/routes.js';
import { webhookRoutes } from './webhooks/routes.js';
import { workflowRoutes } from './workflows/routes.js';
import { schemaRoutes } from './workflows/schema-routes.js';
import { registerLanding } from './http/landing.js';
import { registerWebApp } from './http/web-app.js';
import { secretRoutes } from './secrets/routes.js';
import { connectorRoutes } from './connectors/routes.js';
import { sessionRoutes } from './sessions/routes.js';
import { metricsAccess, registerObservability } from './observability/http.js';

export const BODY_LIMIT = 10 * 1024 * 1024;

/** Builds the HTTP app from the area plugins, each given its services. No business logic here. */
export async function buildApp(ctx: AppContext, services: Services): Promise<FastifyInstance> {
  const { accounts, limits, plans, workflows, tables, ai, runs, webhooks, webhookRegistry, scheduleRegistry, knowledge } = services;
  const app = Fastify({
    loggerInstance: ctx.log as unknown as FastifyBaseLogger,
    bodyLimit: BODY_LIMIT,
    genReqId: (req) => {
      const given = req.headers['x-request-id'];
      return typeof given === 'string' && /^[A-Za-z0-9._:-]{1,128}$/.test(given) ? given : randomUUID();
    },
    logController: new Fastify.LogController({
      requestIdLogLabel: 'requestId',
      // Fastify's own two lines per request are off: observability logs one line per request (src/observability/http.ts).
      disableRequestLogging: true,
    }),
    // Caller-chosen run ids are up to 128 characters, and they come back in paths (router default: 100).
    routerOptions: { ignoreTrailingSlash: true, maxParamLength: 512 },
    // Behind a reverse proxy (WEFT_TRUST_PROXY): the client's address and scheme from X-Forwarded-*.
    trustProxy: ctx.config.dashboard.trustProxy,
    forceCloseConnections: false,
    return503OnClosing: true,
    connectionTimeout: ctx.config.connectionTimeoutMs,
    requestTimeout: ctx.config.requestTimeoutMs,
    keepAliveTimeout: ctx.config.keepAliveTimeoutMs,
  }).withTypeProvider<ZodTypeProvider>();

  app.setValidatorCompiler(validatorCompiler);
  app.setSerializerCompiler(serializerCompiler);
  app.addHook('onRequest', async (request, reply) => {
    reply.header('X-Request-Id', request.id);
  });
  // Before authentication, so that a cross-origin caller can read a 401 too.
  registerCrossOrigin(app, ctx.config.executeCorsOrigins, [LEGACY_EXECUTE_PATH]);
  registerErrorHandling(app);
  registerJsonParser(app);
  registerWorkflowAnswerPolicy(app);
  registerPublicOrigin(app, ctx.config.publicBaseUrl);
  // Before the area plugins, so that its hooks wrap every route. Adds GET /metrics.
  registerObservability(app, services.observer, { metrics: metricsAccess(ctx.config.host, ctx.config.observability.metricsToken) });

  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'Weft API',
        version: '0.1.0',
        description: 'Workflows, jobs, tables, knowledge bases and an OpenAI-compatible AI gateway. Authenticate with the X-API-Key header.',
      },
      components: {
        securitySchemes: {
          apiKey: { type: 'apiKey', in: 'header', name: 'X-API-Key' },
          bearer: { type: 'http', scheme: 'bearer' },
        },
      },
      security: [{ apiKey: [] }],
    },
    ...openapiTransforms,
  });
  await app.register(swaggerUi, { routePrefix: '/api/docs', uiConfig: { docExpansion: 'list', deepLinking: true } });

  // Cookies are parsed before the auth hook, which takes a session cookie where no key is sent.
  await app.register(cookie);
  registerAuth(app, accounts.verifyKey, services.sessions.authenticate);
  registerApiRateLimit(app, limits, accounts);

  app.get('/api/openapi.json', { schema: { hide: true }, config: { auth: 'none' } }, async () => app.swagger());
  registerLanding(app, await registerWebApp(app, ctx.config.dashboard.webDist));

  app.get('/healthz', {
    schema: { tags: ['health'], summary: 'Liveness', security: [], response: { 200: z.object({ status: z.literal('ok') }) } },
    config: { auth: 'none' },
  }, async () => ({ status: 'ok' as const }));

  app.get('/readyz', {
    schema: {
      tags: ['health'], summary: 'Readiness: the database answers', security: [],
      response: { 200: z.object({ status: z.literal('ready'), database: z.string() }), 503: z.object({ error: z.string() }) },
    },
    config: { auth: 'none' },
  }, async (_req, reply) => {
    // Not ready while the database is away (stopped, restarting, refusing connections) or too slow to
    // answer a ping within 5 s: a load balancer sends traffic elsewhere and comes back.
    let timer: NodeJS.Timeout | undefined;
    try {
      await Promise.race([
        ctx.db.ping(),
        new Promise((_, reject) => {
          timer = setTimeout(() => reject(new Error('ping timed out')), 5_000);
        }),
      ]);
      return { status: 'ready' as const, database: ctx.db.mode };
    } catch {
      return reply.code(503).header('retry-after', '2').send({ error: 'Database unreachable' });
    } finally {
      clearTimeout(timer);
    }
  });

  await app.register(sessionRoutes(services.sessions, { baseUrl: ctx.config.baseUrl }));
  await app.register(accountRoutes(accounts));
  await app.register(auditRoutes(accounts, limits, ctx.db));
  await app.register(limitRoutes(limits, accounts, plans));
  await app.register(workflowRoutes(workflows, accounts, limits, webhookRegistry, scheduleRegistry));
  await app.register(schemaRoutes());
  await app.register(runRoutes(runs, workflows, accounts), { ctx });
  await app.register(logRoutes(runs, workflows, accounts, { scans: services.scans, queryTimeout: services.queryTimeout }), { ctx });
  await app.register(resumeRoutes(runs, workflows, accounts), { ctx });
  await app.register(tableRoutes(tables, accounts));
  await app.register(aiRoutes(ai, accounts), { ctx });
  await app.register(webhookRoutes(webhooks, accounts, () => runs.baseUrl()));
  await app.register(knowledgeRoutes(knowledge, accounts, ctx.config.knowledge.maxFileBytes));
  await app.register(secretRoutes(services.secrets, accounts));
  await app.register(connectorRoutes(services.connectors, accounts));
  await app.register(mcpRoutes(runs, workflows, accounts), { ctx });
  return app;
}

