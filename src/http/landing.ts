// GET /: browsers (Accept: text/html) get the dashboard when it is built (web-app.ts), else a small HTML
// page of links; programs get JSON: where to go from here (the dashboard when built, the API reference, the
// OpenAPI document, the definition schema, health) and how to get in (a key, the admin's sign-in, a lost
// password): what the start banner (start-banner.ts) prints, for a newcomer who only has the URL.
import type { FastifyInstance } from 'fastify';
import type { WebApp } from './web-app.js';

const LINKS = [
  ['apiReference', '/api/docs', 'API reference (interactive)'],
  ['openapi', '/api/openapi.json', 'OpenAPI document'],
  ['workflowDefinitionSchema', '/api/v1/schemas/workflow-definition.json', 'JSON Schema of a workflow definition'],
  ['health', '/healthz', 'liveness'],
  ['readiness', '/readyz', 'readiness (the database answers)'],
] as const;

const AUTH = 'Send an API key as the X-API-Key header (the AI gateway also takes Authorization: Bearer). The first key is printed when the server first starts; `weft keys create --workspace default` makes another.';

const SIGN_IN = 'Sign in to the dashboard with the admin email (WEFT_ADMIN_EMAIL, default admin@localhost) and the one-time password printed at first start.';
const LOST_PASSWORD = '`npx weft users reset-password --email <email>` prints a new one-time password; `npx weft setup --json` makes a new workspace key.';

const html = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Weft</title>
<style>body{font:16px/1.5 system-ui,sans-serif;max-width:40rem;margin:3rem auto;padding:0 1rem}code{background:#eee;padding:0 .2em}</style></head>
<body><h1>Weft</h1><p>Workflow automation service. The dashboard is not built here (<code>npm run build</code> builds it into web/dist).</p><ul>
${LINKS.map(([, href, text]) => `<li><a href="${href}">${text}</a> <code>${href}</code></li>`).join('\n')}
</ul><p>${AUTH.replace(/`([^`]+)`/g, '<code>$1</code>')}</p></body></html>
`;

export function registerLanding(app: FastifyInstance, webApp?: WebApp): void {
  app.get('/', { schema: { hide: true }, config: { auth: 'none' } }, async (request, reply) => {
    // Browsers and JSON clients get different bodies at the same URL: caches must keep them apart.
    reply.header('vary', 'Accept');
    if (/\btext\/html\b/.test(request.headers.accept ?? '')) {
      return webApp ? webApp.sendIndex(reply) : reply.type('text/html; charset=utf-8').send(html);
    }
    // The dashboard link only when a build is served: without one, a browser at / gets the page above.
    const links = { ...(webApp ? { dashboard: '/' } : {}), ...Object.fromEntries(LINKS.map(([key, href]) => [key, href])) };
    return {
      name: 'Weft',
      description: 'Workflow automation service: workflows, tables, knowledge bases and an AI gateway over HTTP',
      links,
      auth: AUTH,
      signIn: webApp ? SIGN_IN : 'The dashboard is not built here (`npm run build` builds it into web/dist).',
      lostPassword: LOST_PASSWORD,
    };
  });
}
