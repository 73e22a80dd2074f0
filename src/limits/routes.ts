import type { FastifyInstance } from 'fastify';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { AccountsService } from '../accounts/service.js';
import { requireAuth } from '../http/auth.js';
import { errorResponses, errorSchema, validationErrorSchema } from '../http/schemas.js';
import type { PlanAdministration } from './plan-admin.js';
import { PLAN_NAMES } from './plans.js';
import { rateHeaders, type LimitsService } from './service.js';
import { workspaceAccountOf, workspaceIdParam } from './usage.js';

const bucketView = z.object({
  limit: z.number().int(), remaining: z.number().int(), reset: z.string(),
  requestsPerMinute: z.number().int(), maxBurst: z.number().int(), resetAt: z.string(), isLimited: z.boolean(),
});

/**
 * Every authenticated /api/v1 request takes a token of its account's `api` bucket. Registered on the root
 * instance (not encapsulated), so it reaches every area's routes.
 */
export function registerApiRateLimit(app: FastifyInstance, limits: LimitsService, accounts: AccountsService): void {
  app.addHook('preHandler', async (request, reply) => {
    if (!request.auth || !request.routeOptions.url?.startsWith('/api/v1/')) return;
    const { account, plan } = await accounts.billedAccount(request.auth);
    const state = await limits.admitApi(account, plan);
    for (const [k, v] of Object.entries(rateHeaders(state))) reply.header(k, v);
  });
}

/** Plans and usage: the usage-limits report and the plan administration route. */
export function limitRoutes(limits: LimitsService, accounts: AccountsService, plans: PlanAdministration): FastifyPluginAsyncZod {
  return async (app) => {
    app.get('/api/users/me/usage-limits', {
      config: { errorFamily: 'coded', rateLimitHeaders: false },
      schema: {
        tags: ['limits'],
        summary: 'Rate limits, usage cost of the billing period and storage of the caller\'s billed account (or, with workspaceId, of the workspace\'s)',
        querystring: z.object({
          workspaceId: workspaceIdParam.optional()
            .describe("Report the workspace's billed account (workspace:<id>) instead of the caller's: workspace admins and the workspace's own keys"),
        }),
        response: {
          200: z.object({
            success: z.literal(true),
            rateLimit: z.object({ sync: bucketView, async: bucketView, authType: z.literal('api') }),
            usage: z.object({ currentPeriodCost: z.number(), limit: z.number(), plan: z.string(), isExceeded: z.boolean() }),
            storage: z.object({ usedBytes: z.number().int(), limitBytes: z.number().int(), percentUsed: z.number() }),
            account: z.string().optional().describe('With workspaceId: the billed account reported (workspace:<id>)'),
          }),
          400: validationErrorSchema, 401: errorSchema, 403: errorSchema, 404: errorSchema,
        },
      },
    }, async (request) => {
      const auth = requireAuth(request);
      if (request.query.workspaceId) {
        const { account, workspaceId } = await workspaceAccountOf(accounts, auth, request.query.workspaceId);
        // The plan and storage a workspace key of this workspace would see: the workspace's, not the caller's.
        return { ...(await limits.usageLimits(account, await accounts.workspacePlan(workspaceId), [workspaceId])), account };
      }
      const { account, plan, workspaceIds } = await accounts.billedAccount(auth);
      return limits.usageLimits(account, plan, workspaceIds);
    });

    app.put('/api/v1/workspaces/:id/plan', {
      schema: {
        tags: ['limits'], summary: 'Set a workspace\'s plan (instance administrators, with a personal key)',
        params: z.object({ id: z.string().min(1).max(128) }),
        body: z.object({ plan: z.enum(PLAN_NAMES as [string, ...string[]]) }).strict(),
        response: { 200: z.object({ success: z.literal(true), data: z.object({ workspaceId: z.string(), plan: z.string() }) }), ...errorResponses },
      },
    }, async (request) => {
      const access = await accounts.authorize(request.auth, request.params.id, 'admin', { conceal: true });
      await plans.setPlan(access.workspaceId, request.body.plan, access);
      return { success: true as const, data: { workspaceId: access.workspaceId, plan: request.body.plan } };
    });
  };
}
