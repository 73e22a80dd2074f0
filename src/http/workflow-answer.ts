// Answers whose body or headers a workflow or a tenant controls (run outputs, Response blocks, uploaded
// files) are served on the service's own origin, the dashboard's. They must be inert there: no script may
// run from them, no cookie may be set by them, and a browser must not guess a type nobody stated
// (docs/architecture.md, "Workflow-controlled answers").
import type { FastifyInstance } from 'fastify';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** The route may send a Response block's headers: any cookie on its answer is dropped, whatever set it. */
    workflowAnswer?: boolean;
  }
}

/** Headers the service itself puts on a run's answer beside a Response block's (kept by the header filter). */
export const SERVICE_HEADERS: readonly string[] = ['allow', 'x-execution-id'];

/** A page opened from an API answer gets no script, no plugin, no form and an opaque origin. */
export const API_ANSWER_CSP = "default-src 'none'; sandbox";

/** The API's reference page (Swagger UI) needs its scripts: its routes, as registered. */
const REFERENCE_PAGE_ROUTE = /^\/api\/docs(?:\/|$)/;

/**
 * Every answer says `nosniff`, and every answer gets the sandboxing policy unless its route set a policy of
 * its own (the dashboard's page, the resume page) or is the API reference page. Decided by the route that
 * matched, never by the raw URL: `/%61pi/...` reaches the same handlers as `/api/...`, and a default that
 * covers every route cannot be forgotten by one added later.
 */
export function registerWorkflowAnswerPolicy(app: FastifyInstance): void {
  app.addHook('onSend', async (request, reply, payload) => {
    reply.header('x-content-type-options', 'nosniff');
    if (!reply.hasHeader('content-security-policy') && !REFERENCE_PAGE_ROUTE.test(request.routeOptions.url ?? '')) {
      reply.header('content-security-policy', API_ANSWER_CSP);
    }
    if (request.routeOptions.config.workflowAnswer) reply.removeHeader('set-cookie');
    return payload;
  });
}
