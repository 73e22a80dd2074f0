// WEFT_PUBLIC_BASE_URL: operators may serve webhook trigger URLs from an origin of their own (another host
// name pointed at the same server), so that nothing a workflow answers ever shares an origin with the
// dashboard's cookies. Requests that arrive on that origin reach the trigger routes and health checks only.
import type { FastifyInstance } from 'fastify';
import { HttpError } from './errors.js';

/** The routes (as registered, not the raw URL: a percent-encoded path reaches the same route) served there. */
const PUBLIC_ROUTES = new Set(['/api/webhooks/trigger/:path', '/healthz', '/readyz']);

export function registerPublicOrigin(app: FastifyInstance, publicBaseUrl: string | undefined): void {
  if (!publicBaseUrl) return;
  const publicHost = new URL(publicBaseUrl).host.toLowerCase();
  app.addHook('onRequest', async (request) => {
    if (request.host.toLowerCase() === publicHost && !PUBLIC_ROUTES.has(request.routeOptions.url ?? '')) throw new HttpError(404, 'Not Found');
  });
}
