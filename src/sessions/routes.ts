// The dashboard's sign-in routes under /api/v1/auth. Every other /api route takes the session cookie
// through the auth hook (src/http/auth.ts); these read it themselves, since signing in needs no key.
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { checkCsrf, SESSION_COOKIE } from '../http/auth.js';
import { HttpError } from '../http/errors.js';
import { errorSchema, validationErrorSchema } from '../http/schemas.js';
import { MAX_PASSWORD_LENGTH, MIN_PASSWORD_LENGTH } from './password.js';
import type { SessionCaller, SessionService } from './service.js';

const userSchema = z.object({ id: z.string(), email: z.string(), name: z.string() });
const signedInSchema = z.object({
  user: userSchema,
  csrfToken: z.string().describe('Send as the X-CSRF-Token header on every POST, PUT, PATCH and DELETE made with the session'),
  mustChangePassword: z.boolean().describe('The password is a one-time one: the dashboard asks for a new one (the API does not refuse other calls)'),
});
const sessionSchema = signedInSchema.extend({
  workspaces: z.array(z.object({ id: z.string(), name: z.string(), role: z.enum(['admin', 'write', 'read']) })),
});
const errors = { 400: validationErrorSchema, 401: errorSchema, 403: errorSchema, 429: errorSchema };

export interface SessionRouteOptions {
  /** WEFT_BASE_URL: an https base makes the cookie Secure even when a proxy forwards plain HTTP. */
  baseUrl?: string;
}

/** POST /api/v1/auth/login, GET /session, POST /logout, /logout-all, /password. */
export function sessionRoutes(sessions: SessionService, opts: SessionRouteOptions = {}): FastifyPluginAsyncZod {
  // Secure when the browser talks HTTPS: a TLS socket here, X-Forwarded-Proto from a trusted proxy
  // (WEFT_TRUST_PROXY), or a public base URL that is https.
  const secure = (request: FastifyRequest) => request.protocol === 'https' || Boolean(opts.baseUrl?.startsWith('https:'));
  const cookieOptions = (request: FastifyRequest) => ({ path: '/', httpOnly: true, sameSite: 'lax' as const, secure: secure(request) });

  const currentSession = async (request: FastifyRequest): Promise<SessionCaller | undefined> => {
    const token = request.cookies[SESSION_COOKIE];
    return token ? sessions.authenticate(token) : undefined;
  };
  // Routes that need a session check it before the body is parsed: a caller without one gets 401, not 400.
  const signedIn = new WeakMap<FastifyRequest, SessionCaller>();
  const requireSession = async (request: FastifyRequest): Promise<void> => {
    const caller = await currentSession(request);
    if (!caller) throw new HttpError(401, 'Not signed in');
    checkCsrf(request, caller.csrfToken);
    signedIn.set(request, caller);
  };
  const callerOf = (request: FastifyRequest): SessionCaller => {
    const caller = signedIn.get(request);
    if (!caller) throw new HttpError(401, 'Not signed in');
    return caller;
  };
  // Answers carry the CSRF token or end a session: never stored by a cache.
  const noStore = (reply: FastifyReply) => reply.header('cache-control', 'no-store');

  return async (app) => {
    app.post('/api/v1/auth/login', {
      schema: {
        tags: ['auth'], summary: 'Sign in to the dashboard with email and password (sets the weft_session cookie)', security: [],
        body: z.object({ email: z.string().min(1).max(1000), password: z.string().min(1).max(1000) }),
        response: { 200: signedInSchema, ...errors },
      },
      config: { auth: 'none' },
    }, async (request, reply) => {
      const session = await sessions.signIn(request.body.email, request.body.password, request.ip);
      noStore(reply).setCookie(SESSION_COOKIE, session.token, { ...cookieOptions(request), maxAge: sessions.maxAgeSeconds });
      return { user: session.user, csrfToken: session.csrfToken, mustChangePassword: session.mustChangePassword };
    });

    app.get('/api/v1/auth/session', {
      schema: {
        tags: ['auth'], summary: 'The signed-in user, the CSRF token and the user\'s workspaces with roles', security: [],
        response: { 200: sessionSchema, 401: errorSchema },
      },
      config: { auth: 'none' },
    }, async (request, reply) => {
      const caller = await currentSession(request);
      const view = caller ? await sessions.describe(caller) : undefined;
      if (!view) throw new HttpError(401, 'Not signed in');
      noStore(reply);
      return view;
    });

    app.post('/api/v1/auth/logout', {
      schema: { tags: ['auth'], summary: 'Sign out (ends this session, clears the cookie)', security: [], response: { 204: z.null(), 401: errorSchema, 403: errorSchema } },
      config: { auth: 'none' },
    }, async (request, reply) => {
      const caller = await currentSession(request);
      if (!caller) {
        // Nothing to end (expired, signed out elsewhere): say so, and drop whatever cookie was sent.
        noStore(reply).clearCookie(SESSION_COOKIE, cookieOptions(request));
        throw new HttpError(401, 'Not signed in');
      }
      checkCsrf(request, caller.csrfToken);
      await sessions.signOut(caller.sessionId);
      noStore(reply).clearCookie(SESSION_COOKIE, cookieOptions(request));
      return reply.code(204).send(null);
    });

    app.post('/api/v1/auth/logout-all', {
      schema: { tags: ['auth'], summary: 'Sign out everywhere (ends every session of the user)', security: [], response: { 204: z.null(), 401: errorSchema, 403: errorSchema } },
      config: { auth: 'none' },
      onRequest: requireSession,
    }, async (request, reply) => {
      const caller = callerOf(request);
      await sessions.signOutEverywhere(caller.auth.userId);
      noStore(reply).clearCookie(SESSION_COOKIE, cookieOptions(request));
      return reply.code(204).send(null);
    });

    app.post('/api/v1/auth/password', {
      schema: {
        tags: ['auth'], summary: 'Change the signed-in user\'s password (clears mustChangePassword; ends the user\'s other sessions)', security: [],
        body: z.object({
          currentPassword: z.string().min(1).max(1000),
          newPassword: z.string()
            .min(MIN_PASSWORD_LENGTH, `newPassword must be at least ${MIN_PASSWORD_LENGTH} characters`)
            .max(MAX_PASSWORD_LENGTH, `newPassword must be at most ${MAX_PASSWORD_LENGTH} characters`),
        }),
        response: { 204: z.null(), ...errors },
      },
      config: { auth: 'none' },
      onRequest: requireSession,
    }, async (request, reply) => {
      const caller = callerOf(request);
      await sessions.changePassword(caller, request.body.currentPassword, request.body.newPassword, request.ip);
      noStore(reply);
      return reply.code(204).send(null);
    });
  };
}
