import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { AccessControlled } from '../accounts/service.js';
import type { Database } from '../db/database.js';
import { listAudit } from './audit-log.js';
import { decodeCursor, page } from '../http/pagination.js';
import { errorResponses } from '../http/schemas.js';

const entrySchema = z.object({
  id: z.string(),
  workspaceId: z.string(),
  actorId: z.string().nullable(),
  actorKeyId: z.string().nullable(),
  actorType: z.enum(['personal_key', 'workspace_key', 'cli', 'session']).nullable().describe('Which kind of caller acted; a workspace key acts as its workspace; session: a user signed in to the dashboard'),
  action: z.string(),
  resourceType: z.string(),
  resourceId: z.string().nullable(),
  resourceName: z.string().nullable(),
  metadata: z.record(z.string(), z.unknown()),
  createdAt: z.string(),
});

/** The audit log of a workspace. */
export function auditRoutes(accounts: AccessControlled, db: Database): FastifyPluginAsyncZod {
  return async (app) => {
  app.get('/api/v1/audit-logs', {
    schema: {
      tags: ['audit'], summary: 'Administrative actions in a workspace, newest first (workspace admins)',
      querystring: z.object({
        workspaceId: z.string().min(1).max(128),
        limit: z.coerce.number().int().min(1).max(100).default(50),
        cursor: z.string().max(512).optional(),
      }),
      response: {
        200: z.object({ data: z.array(entrySchema), nextCursor: z.string().optional() }),
        ...errorResponses,
      },
    },
  }, async (request) => {
    const { workspaceId, limit, cursor } = request.query;
    const after = decodeCursor(cursor);
    const access = await accounts.authorize(request.auth, workspaceId, 'admin');
    const rows = await listAudit(db, access.workspaceId, limit + 1, after);
    const p = page(rows, limit, (r) => ({ t: r.created_at.toISOString(), id: r.id }));
    return {
      data: p.data.map((r) => ({
        id: r.id,
        workspaceId: r.workspace_id,
        actorId: r.actor_id,
        actorKeyId: r.actor_key_id,
        actorType: r.actor_type,
        action: r.action,
        resourceType: r.resource_type,
        resourceId: r.resource_id,
        resourceName: r.resource_name,
        metadata: r.metadata,
        createdAt: r.created_at.toISOString(),
      })),
      ...(p.nextCursor ? { nextCursor: p.nextCursor } : {}),
    };
  });
};
}
