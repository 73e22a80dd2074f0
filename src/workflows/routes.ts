import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { FastifyRequest } from 'fastify';
import { z } from 'zod';
import type { AppContext } from '../context.js';
import { workflowDefinitionSchema } from '../engine/index.js';
import { authorizeWorkspace, type WorkspaceAccess } from '../http/auth.js';
import { HttpError } from '../http/errors.js';
import { decodeCursor, page } from '../http/pagination.js';
import { errorResponses } from '../http/schemas.js';
import { limitsSchema } from '../limits/schemas.js';
import { isUuid } from '../ids.js';
import * as service from './service.js';
import { findWorkflowAnyWorkspace, listWorkflows, type WorkflowRow } from './store.js';
import type { Role } from '../accounts/store.js';

const workflowSchema = z.object({
  id: z.string(),
  workspaceId: z.string(),
  name: z.string(),
  description: z.string(),
  definition: z.unknown(),
  isDeployed: z.boolean(),
  deployedAt: z.string().nullable(),
  version: z.number().int().nullable().describe('Active deployed version number'),
  createdAt: z.string(),
  updatedAt: z.string(),
});
const summarySchema = workflowSchema.omit({ definition: true });
const workflowEnvelope = z.object({ success: z.literal(true), data: z.object({ workflow: workflowSchema }) });
const deploymentSchema = z.object({
  success: z.literal(true),
  data: z.object({ id: z.string(), isDeployed: z.boolean(), deployedAt: z.string().nullable(), version: z.number().int().nullable() }),
});
const idParams = z.object({ id: z.string().min(1).max(128) });
const name = z.string().trim().min(1).max(200);

/**
 * Loads a workflow for the caller: another workspace's workflow, or one the key cannot reach,
 * is answered like a missing one (404).
 */
export async function accessWorkflow(
  ctx: AppContext,
  request: FastifyRequest,
  id: string,
  role: Role,
  opts: { forRun?: boolean } = {},
): Promise<{ access: WorkspaceAccess; workflow: WorkflowRow }> {
  const lookup = opts.forRun ? service.findWorkflowForRun : findWorkflowAnyWorkspace;
  const workflow = isUuid(id) ? await lookup(ctx.db, id) : undefined;
  if (!workflow) throw new HttpError(404, 'Workflow not found');
  const access = await authorizeWorkspace(ctx.db, request, workflow.workspace_id, role, { conceal: true, notFoundMessage: 'Workflow not found' });
  return { access, workflow };
}

const deployment = (w: service.PublicWorkflow) => ({
  success: true as const,
  data: { id: w.id, isDeployed: w.isDeployed, deployedAt: w.deployedAt, version: w.version },
});

export const workflowRoutes: FastifyPluginAsyncZod<{ ctx: AppContext }> = async (app, { ctx }) => {
  const { db } = ctx;
  const actorOf = (a: WorkspaceAccess) => ({ userId: a.userId, keyId: a.keyId });

  app.post('/api/v1/workflows', {
    schema: {
      tags: ['workflows'], summary: 'Create a workflow (draft)',
      body: z.object({
        workspaceId: z.string().min(1).max(128),
        name,
        description: z.string().max(10_000).optional(),
        definition: workflowDefinitionSchema,
      }),
      response: { 201: workflowEnvelope, ...errorResponses },
    },
  }, async (request, reply) => {
    const access = await authorizeWorkspace(db, request, request.body.workspaceId, 'write');
    const w = await service.createWorkflow(db, access.workspaceId, request.body, actorOf(access));
    return reply.code(201).send({ success: true as const, data: { workflow: service.publicWorkflow(w) } });
  });

  app.get('/api/v1/workflows', {
    schema: {
      tags: ['workflows'], summary: 'List workflows, oldest first, with cursor pagination',
      querystring: z.object({
        workspaceId: z.string().min(1).max(128),
        limit: z.coerce.number().int().min(1).max(100).default(50),
        cursor: z.string().max(512).optional(),
      }),
      response: {
        200: z.object({ success: z.literal(true), data: z.array(summarySchema), nextCursor: z.string().optional(), limits: limitsSchema.optional() }),
        ...errorResponses,
      },
    },
  }, async (request) => {
    const after = decodeCursor(request.query.cursor);
    const access = await authorizeWorkspace(db, request, request.query.workspaceId, 'read');
    const rows = await listWorkflows(db, access.workspaceId, request.query.limit + 1, after);
    const p = page(rows, request.query.limit, (r) => ({ t: r.created_at.toISOString(), id: r.id }));
    return {
      success: true as const,
      data: p.data.map((r) => {
        const { definition: _d, ...rest } = service.publicWorkflow(r);
        return rest;
      }),
      ...(p.nextCursor ? { nextCursor: p.nextCursor } : {}),
      // The reference adds the caller's execution limits to v1 list responses.
      ...(ctx.services.limits ? { limits: await ctx.services.limits.snapshot(access.billedAccount, access.plan) } : {}),
    };
  });

  app.get('/api/v1/workflows/:id', {
    schema: { tags: ['workflows'], summary: 'Get a workflow with its draft definition', params: idParams, response: { 200: workflowEnvelope, ...errorResponses } },
  }, async (request) => {
    const { access } = await accessWorkflow(ctx, request, request.params.id, 'read');
    const w = await service.getWorkflow(db, access.workspaceId, request.params.id);
    return { success: true as const, data: { workflow: service.publicWorkflow(w) } };
  });

  app.put('/api/v1/workflows/:id', {
    schema: {
      tags: ['workflows'], summary: 'Replace the draft definition (the deployed version is unchanged until the next deploy)',
      params: idParams,
      body: z.object({ name: name.optional(), description: z.string().max(10_000).optional(), definition: workflowDefinitionSchema }),
      response: { 200: workflowEnvelope, ...errorResponses },
    },
  }, async (request) => {
    const { access } = await accessWorkflow(ctx, request, request.params.id, 'write');
    const w = await service.updateWorkflow(db, access.workspaceId, request.params.id, request.body, actorOf(access));
    return { success: true as const, data: { workflow: service.publicWorkflow(w) } };
  });

  app.delete('/api/v1/workflows/:id', {
    schema: {
      tags: ['workflows'], summary: 'Delete a workflow and its versions', params: idParams,
      response: { 200: z.object({ success: z.literal(true), data: z.object({ id: z.string(), deleted: z.literal(true) }) }), ...errorResponses },
    },
  }, async (request) => {
    const { access } = await accessWorkflow(ctx, request, request.params.id, 'write');
    await service.deleteWorkflow(db, access.workspaceId, request.params.id, actorOf(access));
    return { success: true as const, data: { id: request.params.id, deleted: true as const } };
  });

  app.post('/api/v1/workflows/:id/deploy', {
    schema: { tags: ['workflows'], summary: 'Deploy the draft as a new immutable version and activate it (workspace admins)', params: idParams, response: { 200: deploymentSchema, ...errorResponses } },
  }, async (request) => {
    const { access } = await accessWorkflow(ctx, request, request.params.id, 'admin');
    const w = await service.deployWorkflow(db, access.workspaceId, request.params.id, actorOf(access));
    return deployment(service.publicWorkflow(w));
  });

  app.delete('/api/v1/workflows/:id/deploy', {
    schema: { tags: ['workflows'], summary: 'Undeploy (workspace admins)', params: idParams, response: { 200: deploymentSchema, ...errorResponses } },
  }, async (request) => {
    const { access } = await accessWorkflow(ctx, request, request.params.id, 'admin');
    const w = await service.undeployWorkflow(db, access.workspaceId, request.params.id, actorOf(access));
    return deployment(service.publicWorkflow(w));
  });

  app.post('/api/v1/workflows/:id/rollback', {
    schema: {
      tags: ['workflows'], summary: 'Activate an earlier version (default: the one before the active version)',
      params: idParams,
      body: z.object({ version: z.number().int().min(1).max(1_000_000).optional() }).strict().optional(),
      response: { 200: deploymentSchema, ...errorResponses },
    },
  }, async (request) => {
    const { access } = await accessWorkflow(ctx, request, request.params.id, 'admin');
    const w = await service.rollbackWorkflow(db, access.workspaceId, request.params.id, request.body?.version, actorOf(access));
    return deployment(service.publicWorkflow(w));
  });

  app.get('/api/workflows/:id/status', {
    schema: {
      tags: ['workflows'], summary: 'Deployment status', params: idParams,
      response: { 200: z.object({ isDeployed: z.boolean(), deployedAt: z.string().nullable(), version: z.number().int().nullable() }), ...errorResponses },
    },
  }, async (request) => {
    const { access } = await accessWorkflow(ctx, request, request.params.id, 'read');
    const w = service.publicWorkflow(await service.getWorkflow(db, access.workspaceId, request.params.id));
    return { isDeployed: w.isDeployed, deployedAt: w.deployedAt, version: w.version };
  });
};
