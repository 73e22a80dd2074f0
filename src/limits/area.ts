import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { withGlobalHooks, type AppContext, type AreaPlugin } from '../context.js';
import type { AuthContext } from '../http/auth.js';
import { authorizeWorkspace, invalidateAccessCache, requireAuth } from '../http/auth.js';
import { HttpError } from '../http/errors.js';
import { errorResponses, errorSchema } from '../http/schemas.js';
import { planTable, PLAN_NAMES } from './plans.js';
import { MemoryRateLimiter, MemorySlots } from './rate-limiter.js';
import { RedisLimits } from './redis.js';
import { registerStorageQuota } from './storage.js';
import type { Database } from '../db/database.js';
import { PostgresLimits } from './postgres.js';
import { AdjustableClock, LimitsService, rateHeaders } from './service.js';

declare module '../context.js' {
  interface AreaServices {
    limits: LimitsService;
    /** Billed account and plan of an authenticated key. */
    accountOf: (auth: AuthContext) => Promise<{ account: string; plan: string; workspaceIds: string[] }>;
  }
}

/** Creates the limits service: counters in Redis when REDIS_URL is set, else in PostgreSQL, else (embedded) in memory. */
export function createLimits(ctx: AppContext): LimitsService {
  const plans = planTable(ctx.config.planLimitsJson);
  const clock = new AdjustableClock();
  if (ctx.config.redisUrl) {
    const redis = new RedisLimits(ctx.config.redisUrl, clock);
    return new LimitsService(ctx.config.limitsEnabled, ctx.db, redis, redis, clock, plans);
  }
  if (ctx.db.mode === 'postgres') {
    // Several processes may share this database: keep the counters in it.
    const pg = new PostgresLimits(ctx.db, clock);
    return new LimitsService(ctx.config.limitsEnabled, ctx.db, pg, pg, clock, plans);
  }
  return new LimitsService(ctx.config.limitsEnabled, ctx.db, new MemoryRateLimiter(clock), new MemorySlots(clock), clock, plans);
}

/** Areas whose data depends on the plan (tables' row caps) react to a workspace's plan change. */
export const planChangeHooks: ((db: Database, workspaceId: string, plan: string) => Promise<void>)[] = [];

const bucketView = z.object({
  limit: z.number().int(), remaining: z.number().int(), reset: z.string(),
  requestsPerMinute: z.number().int(), maxBurst: z.number().int(), resetAt: z.string(), isLimited: z.boolean(),
});

/** Plans, rate limits of /api/v1, usage limits. Registered before the other areas (they read `ctx.services.limits`). */
export const limitsArea: AreaPlugin = withGlobalHooks(async (app, { ctx }) => {
  const limits = createLimits(ctx);
  ctx.services.limits = limits;
  registerStorageQuota(ctx.db, async (workspaceId) => {
    if (!limits.enabled) return undefined;
    const rows = await ctx.db.query<{ plan: string }>('SELECT plan FROM workspaces WHERE id = $1', [workspaceId]);
    return limits.plan(rows[0]?.plan ?? 'free').storageBytes;
  });
  ctx.onClose.push(() => limits.close());

  // Billed account of a key: the workspace for workspace keys, the user for personal keys. Cached briefly.
  const accounts = new Map<string, { value: { account: string; plan: string; workspaceIds: string[] }; until: number }>();
  const accountOf = async (auth: AuthContext) => {
    const hit = accounts.get(auth.keyId);
    if (hit && hit.until > Date.now()) return hit.value;
    let value: { account: string; plan: string; workspaceIds: string[] };
    if (auth.keyType === 'workspace' && auth.keyWorkspaceId) {
      const rows = await ctx.db.query<{ plan: string }>('SELECT plan FROM workspaces WHERE id = $1', [auth.keyWorkspaceId]);
      value = { account: `workspace:${auth.keyWorkspaceId}`, plan: rows[0]?.plan ?? 'free', workspaceIds: [auth.keyWorkspaceId] };
    } else {
      const rows = await ctx.db.query<{ plan: string }>('SELECT plan FROM users WHERE id = $1', [auth.userId]);
      const ws = await ctx.db.query<{ workspace_id: string }>('SELECT workspace_id FROM memberships WHERE user_id = $1', [auth.userId]);
      value = { account: `user:${auth.userId}`, plan: rows[0]?.plan ?? 'free', workspaceIds: ws.map((w) => w.workspace_id) };
    }
    if (accounts.size > 10_000) accounts.clear();
    accounts.set(auth.keyId, { value, until: Date.now() + 5_000 });
    return value;
  };
  ctx.services.accountOf = accountOf;

  // Every authenticated /api/v1 request takes a token of its account's `api` bucket.
  app.addHook('preHandler', async (request, reply) => {
    if (!request.auth || !request.routeOptions.url?.startsWith('/api/v1/')) return;
    const { account, plan } = await accountOf(request.auth);
    const state = await limits.admitApi(account, plan);
    for (const [k, v] of Object.entries(rateHeaders(state))) reply.header(k, v);
  });

  await app.register(limitRoutes(limits, accountOf), { ctx });
});

function limitRoutes(limits: LimitsService, accountOf: (a: AuthContext) => Promise<{ account: string; plan: string; workspaceIds: string[] }>): FastifyPluginAsyncZod<{ ctx: AppContext }> {
  return async (app, { ctx }) => {
    app.get('/api/users/me/usage-limits', {
      config: { errorFamily: 'coded' },
      schema: {
        tags: ['limits'], summary: 'Rate limits, usage cost of the billing period and storage of the caller\'s billed account',
        response: {
          200: z.object({
            success: z.literal(true),
            rateLimit: z.object({ sync: bucketView, async: bucketView, authType: z.literal('api') }),
            usage: z.object({ currentPeriodCost: z.number(), limit: z.number(), plan: z.string(), isExceeded: z.boolean() }),
            storage: z.object({ usedBytes: z.number().int(), limitBytes: z.number().int(), percentUsed: z.number() }),
          }),
          401: errorSchema,
        },
      },
    }, async (request) => {
      const { account, plan, workspaceIds } = await accountOf(requireAuth(request));
      return limits.usageLimits(account, plan, workspaceIds);
    });

    app.put('/api/v1/workspaces/:id/plan', {
      schema: {
        tags: ['limits'], summary: 'Set a workspace\'s plan (instance administrators)',
        params: z.object({ id: z.string().min(1).max(128) }),
        body: z.object({ plan: z.enum(PLAN_NAMES as [string, ...string[]]) }).strict(),
        response: { 200: z.object({ success: z.literal(true), data: z.object({ workspaceId: z.string(), plan: z.string() }) }), ...errorResponses },
      },
    }, async (request) => {
      const access = await authorizeWorkspace(ctx.db, request, request.params.id, 'admin', { conceal: true });
      const admin = await ctx.db.query<{ is_admin: boolean }>('SELECT is_admin FROM users WHERE id = $1', [access.userId]);
      if (!admin[0]?.is_admin) throw new HttpError(403, 'Only instance administrators can change plans');
      const { recordAudit } = await import('../audit/store.js');
      await ctx.db.tx(async (q) => {
        await q.query('UPDATE workspaces SET plan = $2, updated_at = now() WHERE id = $1', [access.workspaceId, request.body.plan]);
        await recordAudit(q, {
          workspaceId: access.workspaceId, actorId: access.userId, actorKeyId: access.keyId, action: 'workspace.plan_changed',
          resourceType: 'workspace', resourceId: access.workspaceId, metadata: { plan: request.body.plan },
        });
      });
      invalidateAccessCache();
      for (const hook of planChangeHooks) await hook(ctx.db, access.workspaceId, request.body.plan);
      return { success: true as const, data: { workspaceId: access.workspaceId, plan: request.body.plan } };
    });
  };
}
