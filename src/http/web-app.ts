// The dashboard: the Vite build in web/dist (or WEFT_WEB_DIST) served by the API's own server.
// Hashed files under /assets/ are cached for a year; index.html is revalidated on every load, so a
// new build reaches browsers at once. Any other GET path that is not an API route and not a file gets
// index.html (the app's router shows the page: /workflows/abc deep links work). Paths under /api/
// keep their JSON 404, and a missing file (/assets/x.js, /favicon.ico) is a 404, never index.html.
import fs from 'node:fs';
import path from 'node:path';
import fastifyStatic from '@fastify/static';
import type { FastifyInstance, FastifyReply } from 'fastify';

export interface WebApp {
  /** Answers with index.html (no-cache, with the app's security headers). */
  sendIndex(reply: FastifyReply): FastifyReply;
}

const YEAR_MS = 365 * 24 * 3_600_000;

// The app is its own origin's only code: no inline or foreign scripts, no framing (clickjacking), API
// calls to this origin only. Inline styles are allowed: the canvas positions nodes with style attributes.
const APP_HEADERS: Record<string, string> = {
  'content-security-policy': [
    "default-src 'self'", "script-src 'self'", "style-src 'self' 'unsafe-inline'", "img-src 'self' data: blob:",
    "font-src 'self' data:", "connect-src 'self'", "object-src 'none'", "base-uri 'self'", "form-action 'self'", "frame-ancestors 'none'",
  ].join('; '),
  'x-content-type-options': 'nosniff',
  'x-frame-options': 'DENY',
  'referrer-policy': 'same-origin',
};

/** Serves the built dashboard from `dist`; undefined (nothing registered) when it has no index.html. */
export async function registerWebApp(app: FastifyInstance, dist: string): Promise<WebApp | undefined> {
  if (!fs.existsSync(path.join(dist, 'index.html'))) return undefined;
  await app.register(fastifyStatic, { root: dist, serve: false, index: false, dotfiles: 'ignore' });
  // Files at the top of the build (favicon, robots.txt, ...), read once: a build replaces the folder.
  const topFiles = new Set(fs.readdirSync(dist, { withFileTypes: true }).filter((d) => d.isFile() && d.name !== 'index.html').map((d) => d.name));

  const sendIndex = (reply: FastifyReply): FastifyReply =>
    reply.headers({ ...APP_HEADERS, 'cache-control': 'no-cache' }).sendFile('index.html', { cacheControl: false });

  app.get('/*', { schema: { hide: true }, config: { auth: 'none' } }, async (request, reply) => {
    const rel = (request.params as { '*'?: string })['*'] ?? '';
    if (rel === 'api' || rel.startsWith('api/')) return reply.callNotFound();
    if (rel.startsWith('assets/')) {
      // Content-hashed names: a changed file gets a new name, so the old one may be kept forever.
      return reply.header('x-content-type-options', 'nosniff').sendFile(rel, { maxAge: YEAR_MS, immutable: true });
    }
    if (topFiles.has(rel)) return reply.header('cache-control', 'no-cache').sendFile(rel, { cacheControl: false });
    // A path naming a file that is not there (its last segment has an extension) is a 404.
    if (/\.[A-Za-z0-9]{1,8}$/.test(rel.split('/').pop() ?? '')) return reply.callNotFound();
    return sendIndex(reply);
  });
  return { sendIndex };
}
