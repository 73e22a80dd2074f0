import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { AccessControlled, AccountsService } from '../accounts/service.js';
import type { Database } from '../db/database.js';
import { findAudit, listAudit, type AuditRecord } from './audit-log.js';
import { requireAuth } from '../http/auth.js';
import { HttpError } from '../http/errors.js';
import { decodeCursor, page } from '../http/pagination.js';
import { queryDate, queryFlag, queryList } from '../http/query-params.js';
import { errorResponses } from '../http/schemas.js';
import { limitsSchema } from '../limits/schemas.js';
import type { LimitsService } from '../limits/service.js';

const entrySchema = z.object({
  id: z.string(),
  workspaceId: z.string(),
  actorId: z.string().nullable(),
  actorName: z.string().nullable().describe('The acting user\'s name; null for the CLI or once the user is deleted'),
  actorEmail: z.string().nullable(),
  actorKeyId: z.string().nullable(),
  actorType: z.enum(['personal_key', 'workspace_key', 'cli', 'session']).nullable().describe('Which kind of caller acted; a workspace key acts as its workspace; session: a user signed in to the dashboard'),
  action: z.string(),
  resourceType: z.string(),
  resourceId: z.string().nullable(),
  resourceName: z.string().nullable(),
  description: z.string().describe('The action in words'),
  metadata: z.record(z.string(), z.unknown()),
  createdAt: z.string(),
});

function publicEntry(r: AuditRecord): z.infer<typeof entrySchema> {
  const what = r.resource_name ? ` "${r.resource_name}"` : r.resource_id ? ` ${r.resource_id}` : '';
  return {
    id: r.id,
    workspaceId: r.workspace_id,
    actorId: r.actor_id,
    actorName: r.actor_name,
    actorEmail: r.actor_email,
    actorKeyId: r.actor_key_id,
    actorType: r.actor_type,
    action: r.action,
    resourceType: r.resource_type,
    resourceId: r.resource_id,
    resourceName: r.resource_name,
    description: `${r.action} on ${r.resource_type}${what}`,
    metadata: r.metadata,
    createdAt: r.created_at.toISOString(),
  };
}

/** The audit log of a workspace, for its admins. */
export function auditRoutes(accounts: AccessControlled & Pick<AccountsService, 'billedAccount'>, limits: Pick<LimitsService, 'snapshot'>, db: Database): FastifyPluginAsyncZod {
  return async (app) => {
    app.get('/api/v1/audit-logs', {
      schema: {
        tags: ['audit'], summary: 'Administrative actions in a workspace, newest first (workspace admins)',
        querystring: z.object({
          workspaceId: z.string().min(1).max(128),
          action: z.string().max(2000).optional().describe('Comma-separated actions, e.g. api_key.created'),
          resourceType: z.string().max(2000).optional().describe('Comma-separated resource types, e.g. api_key,workflow'),
          resourceId: z.string().max(200).optional(),
          actorId: z.string().max(128).optional().describe('The acting user\'s id'),
          startDate: z.string().max(40).optional().describe('ISO 8601 date or timestamp: entries at or after it'),
          endDate: z.string().max(40).optional().describe('ISO 8601 date or timestamp: entries at or before it'),
          includeDeparted: z.string().max(10).optional()
            .describe('true/false/1/0 (default false): also the actions of users who have since left the workspace'),
          limit: z.coerce.number().int().min(1).max(100).default(50),
          cursor: z.string().max(512).optional(),
        }),
        response: {
          200: z.object({ data: z.array(entrySchema), nextCursor: z.string().optional(), limits: limitsSchema }),
          ...errorResponses,
        },
      },
    }, async (request) => {
      const q = request.query;
      const after = decodeCursor(q.cursor);
      const filter = {
        actions: queryList(q.action), resourceTypes: queryList(q.resourceType),
        resourceId: q.resourceId?.trim() || undefined, actorId: q.actorId?.trim() || undefined,
        startDate: queryDate('startDate', q.startDate), endDate: queryDate('endDate', q.endDate),
        includeDeparted: queryFlag('includeDeparted', q.includeDeparted) ?? false,
      };
      const access = await accounts.authorize(request.auth, q.workspaceId, 'admin');
      const rows = await listAudit(db, access.workspaceId, q.limit + 1, after, filter);
      const p = page(rows, q.limit, (r) => ({ t: r.created_at.toISOString(), id: r.id }));
      return {
        data: p.data.map(publicEntry),
        ...(p.nextCursor ? { nextCursor: p.nextCursor } : {}),
        limits: await limits.snapshot(access.billedAccount, access.plan),
      };
    });

    app.get('/api/v1/audit-logs/:id', {
      schema: {
        tags: ['audit'], summary: 'One audit log entry (admins of its workspace)',
        params: z.object({ id: z.string().min(1).max(128) }),
        response: { 200: z.object({ data: entrySchema, limits: limitsSchema }), ...errorResponses },
      },
    }, async (request) => {
      const notFound = 'Audit log not found';
      const { workspaceIds } = await accounts.billedAccount(requireAuth(request));
      const row = await findAudit(db, request.params.id, workspaceIds);
      if (!row) throw new HttpError(404, notFound);
      const access = await accounts.authorize(request.auth, row.workspace_id, 'admin', { conceal: true, notFoundMessage: notFound });
      return { data: publicEntry(row), limits: await limits.snapshot(access.billedAccount, access.plan) };
    });
  };
}
