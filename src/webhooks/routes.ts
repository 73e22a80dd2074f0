// The trigger URL: `/api/webhooks/trigger/{path}`. No API key (each trigger has its own optional auth);
// the body is read as raw bytes (signatures are computed over them) and parsed by the service.
import type { FastifyError, FastifyPluginAsync } from 'fastify';
import type { AccountsService } from '../accounts/service.js';
import { allowedResponseHeaders } from '../engine/index.js';
import { HttpError } from '../http/errors.js';
import { SERVICE_HEADERS } from '../http/workflow-answer.js';
import { isUuid } from '../ids.js';
import type { WebhookService } from './service.js';

export const WEBHOOK_BODY_LIMIT = 10 * 1024 * 1024;

/**
 * `linkBase` gives the base of links the run hands out (resume links, file URLs): the configured public base,
 * else the address the server listens on, never the sender's Host header (anyone can send a delivery).
 */
export function webhookRoutes(service: WebhookService, accounts: AccountsService, linkBase: () => string): FastifyPluginAsync {
  return async (app) => {
    // Encapsulated: only this plugin's routes take any content type as bytes.
    app.removeAllContentTypeParsers();
    app.addContentTypeParser('*', { parseAs: 'buffer', bodyLimit: WEBHOOK_BODY_LIMIT }, (_req, body, done) => done(null, body));

    app.get('/api/v1/webhooks/files/:id', {
      schema: { tags: ['webhooks'], summary: 'Download a file uploaded with a webhook delivery (its workspace\'s API key)' },
    }, async (request, reply) => {
      const { id } = request.params as { id: string };
      const file = isUuid(id) ? await service.file(id) : undefined;
      if (!file) throw new HttpError(404, 'File not found');
      await accounts.authorize(request.auth, file.workspace_id, 'read', { conceal: true, notFoundMessage: 'File not found' });
      reply.header('content-type', file.content_type);
      reply.header('content-disposition', `attachment; filename="${file.name.replace(/["\\\r\n]/g, '_')}"`);
      return reply.send(Buffer.from(file.data));
    });

    app.route({
      method: ['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'HEAD', 'OPTIONS'],
      url: '/api/webhooks/trigger/:path',
      exposeHeadRoute: false,
      bodyLimit: WEBHOOK_BODY_LIMIT,
      config: { auth: 'none', errorFamily: 'execute', workflowAnswer: true },
      // A body over the limit is refused as the reference words it, in text; every other error goes on to the
      // server's handler (a handler that throws hands the error to its parent).
      errorHandler: (err: FastifyError, _request, reply) => {
        if (err.code !== 'FST_ERR_CTP_BODY_TOO_LARGE') throw err;
        reply.code(413).type('text/plain; charset=utf-8').send('Request body too large');
      },
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
            // Fastify's: the socket's address, X-Forwarded-For's only with WEFT_TRUST_PROXY.
            ip: request.ip,
            baseUrl: linkBase(),
            signal: abort.signal,
          });
          reply.code(answer.status).type(answer.text ? 'text/plain; charset=utf-8' : 'application/json; charset=utf-8');
          // A Response block's headers (its content type included) as it set them, the allow-listed ones only.
          for (const [k, v] of Object.entries(allowedResponseHeaders(answer.headers, SERVICE_HEADERS))) reply.header(k, v);
          return reply.send(answer.body);
        } finally {
          request.raw.socket?.off('close', onClose);
        }
      },
    });
  };
}
