import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { AppContext } from '../context.js';
import { authorizeWorkspace } from '../http/auth.js';
import { decodeCursor, page } from '../http/pagination.js';
import { errorResponses } from '../http/schemas.js';
import { listAudit } from './store.js';

const entrySchema = z.object({
  id: z.string(),
  workspaceId: z.string(),
  actorId: z.string().nullable(),
  actorKeyId: z.string().nullable(),
  action: z.string(),
  resourceType: z.string(),
  resourceId: z.string().nullable(),
  resourceName: z.string().nullable(),
  metadata: z.record(z.string(), z.unknown()),
  createdAt: z.string(),
});

export const auditRoutes: FastifyPluginAsyncZod<{ ctx: AppContext }> = async (app, { ctx }) => {
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
    const access = await authorizeWorkspace(ctx.db, request, workspaceId, 'admin');
    const rows = await listAudit(ctx.db, access.workspaceId, limit + 1, after);
    const p = page(rows, limit, (r) => ({ t: r.created_at.toISOString(), id: r.id }));
    return {
      data: p.data.map((r) => ({
        id: r.id,
        workspaceId: r.workspace_id,
        actorId: r.actor_id,
        actorKeyId: r.actor_key_id,
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
