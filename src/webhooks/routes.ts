// The trigger URL: `/api/webhooks/trigger/{path}`. No API key (each trigger has its own optional auth);
// the body is read as raw bytes (signatures are computed over them) and parsed by the service.
import type { FastifyPluginAsync } from 'fastify';
import type { AppContext } from '../context.js';
import type { WebhookService } from './service.js';

export const WEBHOOK_BODY_LIMIT = 10 * 1024 * 1024;

export function webhookRoutes(service: WebhookService): FastifyPluginAsync<{ ctx: AppContext }> {
  return async (app, { ctx }) => {
    // Encapsulated: only this plugin's routes take any content type as bytes.
    app.removeAllContentTypeParsers();
    app.addContentTypeParser('*', { parseAs: 'buffer', bodyLimit: WEBHOOK_BODY_LIMIT }, (_req, body, done) => done(null, body));

    app.route({
      method: ['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'HEAD', 'OPTIONS'],
      url: '/api/webhooks/trigger/:path',
      exposeHeadRoute: false,
      bodyLimit: WEBHOOK_BODY_LIMIT,
      config: { auth: 'none', errorFamily: 'execute' },
      schema: {
        tags: ['webhooks'],
        summary: 'Webhook trigger: POST runs the deployed workflow; GET answers provider verification challenges',
        security: [],
      },
      handler: async (request, reply) => {
        const { path } = request.params as { path: string };
        const qAt = request.url.indexOf('?');
        const rawQuery = qAt < 0 ? '' : request.url.slice(qAt + 1);
        const query: Record<string, string> = {};
        for (const [k, v] of new URLSearchParams(rawQuery)) if (!(k in query)) query[k] = v;
        const abort = new AbortController();
        const onClose = () => abort.abort();
        request.raw.socket?.once('close', onClose);
        try {
          const answer = await service.handle({
            method: request.method,
            path,
            rawQuery,
            query,
            headers: request.headers,
            raw: Buffer.isBuffer(request.body) ? request.body : Buffer.alloc(0),
            contentType: request.headers['content-type'],
            baseUrl: ctx.config.baseUrl ?? `${request.protocol}://${request.host}`,
            signal: abort.signal,
          });
          reply.code(answer.status).type(answer.text ? 'text/plain; charset=utf-8' : 'application/json; charset=utf-8');
          // A Response block's headers (its content type included) as it set them.
          for (const [k, v] of Object.entries(answer.headers)) reply.header(k, v);
          return reply.send(answer.body);
        } finally {
          request.raw.socket?.off('close', onClose);
        }
      },
    });
  };
}
