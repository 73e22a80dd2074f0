import { randomUUID } from 'node:crypto';
import Fastify, { type FastifyBaseLogger, type FastifyInstance } from 'fastify';
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import { jsonSchemaTransform, serializerCompiler, validatorCompiler, type ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { AppContext } from './context.js';
import { registerErrorHandling } from './http/errors.js';
import { configureAccessCache, registerAuth } from './http/auth.js';
import { registerJsonParser } from './http/json-body.js';
import { accountRoutes } from './accounts/routes.js';
import { auditRoutes } from './audit/routes.js';
import { areas as extraAreas } from './areas.js';

export const BODY_LIMIT = 10 * 1024 * 1024;

declare module 'fastify' {
  interface FastifyInstance {
    ctx: AppContext;
  }
}

/** Builds the HTTP app from the area plugins. No business logic here. */
export async function buildApp(ctx: AppContext): Promise<FastifyInstance> {
  const app = Fastify({
    loggerInstance: ctx.log as unknown as FastifyBaseLogger,
    bodyLimit: BODY_LIMIT,
    genReqId: (req) => {
      const given = req.headers['x-request-id'];
      return typeof given === 'string' && /^[A-Za-z0-9._:-]{1,128}$/.test(given) ? given : randomUUID();
    },
    logController: new Fastify.LogController({
      requestIdLogLabel: 'requestId',
      // Per-request lines only at debug: at info the hot paths would log twice per request.
      disableRequestLogging: ctx.config.logLevel !== 'debug' && ctx.config.logLevel !== 'trace',
    }),
    routerOptions: { ignoreTrailingSlash: true },
    forceCloseConnections: false,
    return503OnClosing: true,
  }).withTypeProvider<ZodTypeProvider>();

  app.decorate('ctx', ctx);
  app.setValidatorCompiler(validatorCompiler);
  app.setSerializerCompiler(serializerCompiler);
  app.addHook('onRequest', async (request, reply) => {
    reply.header('X-Request-Id', request.id);
  });
  registerErrorHandling(app);
  registerJsonParser(app);

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
    transform: jsonSchemaTransform,
  });
  await app.register(swaggerUi, { routePrefix: '/api/docs', uiConfig: { docExpansion: 'list', deepLinking: true } });

  configureAccessCache(ctx.config.keyCacheMs);
  registerAuth(app, ctx.keys);

  app.get('/api/openapi.json', { schema: { hide: true }, config: { auth: 'none' } }, async () => app.swagger());

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
    try {
      await ctx.db.ping();
      return { status: 'ready' as const, database: ctx.db.mode };
    } catch {
      return reply.code(503).send({ error: 'Database unreachable' });
    }
  });

  await app.register(accountRoutes, { ctx });
  await app.register(auditRoutes, { ctx });
  for (const area of extraAreas) await app.register(area, { ctx });
  return app;
}

