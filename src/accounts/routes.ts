import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { AppContext } from '../context.js';
import { authorizeWorkspace, requireAuth } from '../http/auth.js';
import { HttpError } from '../http/errors.js';
import { errorResponses } from '../http/schemas.js';
import { isUuid } from '../ids.js';
import * as service from './service.js';
import * as store from './store.js';

const keySchema = z.object({
  id: z.string(),
  name: z.string(),
  type: z.enum(['personal', 'workspace']),
  workspaceId: z.string().nullable(),
  userId: z.string(),
  displayKey: z.string().describe('Prefix and last four characters; the secret is never shown again'),
  createdAt: z.string(),
  lastUsedAt: z.string().nullable(),
});

const workspaceSchema = z.object({
  id: z.string(),
  name: z.string(),
  allowPersonalKeys: z.boolean(),
  plan: z.string(),
  createdAt: z.string(),
  updatedAt: z.string(),
});

const publicWorkspace = (w: store.WorkspaceRow) => ({
  id: w.id,
  name: w.name,
  allowPersonalKeys: w.allow_personal_keys,
  plan: w.plan,
  createdAt: w.created_at.toISOString(),
  updatedAt: w.updated_at.toISOString(),
});

export const accountRoutes: FastifyPluginAsyncZod<{ ctx: AppContext }> = async (app, { ctx }) => {
  const { db } = ctx;

  app.get('/api/v1/keys', {
    schema: {
      tags: ['keys'], summary: 'List the API keys usable in a workspace (workspace admins)',
      querystring: z.object({ workspaceId: z.string().min(1).max(128) }),
      response: { 200: z.object({ success: z.literal(true), data: z.object({ keys: z.array(keySchema) }) }), ...errorResponses },
    },
  }, async (request) => {
    const access = await authorizeWorkspace(db, request, request.query.workspaceId, 'admin');
    const rows = await store.listKeysForWorkspace(db, access.workspaceId);
    return { success: true as const, data: { keys: rows.map(service.publicKey) } };
  });

  app.post('/api/v1/keys', {
    schema: {
      tags: ['keys'], summary: 'Create an API key; the secret is returned once (workspace admins)',
      body: z.object({
        workspaceId: z.string().min(1).max(128),
        name: z.string().trim().min(1).max(100),
        type: z.enum(['personal', 'workspace']).default('workspace'),
      }),
      response: {
        201: z.object({
          success: z.literal(true),
          data: keySchema.extend({ key: z.string().describe('The secret, shown only in this response') }),
        }),
        ...errorResponses,
      },
    },
  }, async (request, reply) => {
    const access = await authorizeWorkspace(db, request, request.body.workspaceId, 'admin');
    const created = await service.createKey(
      db,
      { workspaceId: access.workspaceId, userId: access.userId, type: request.body.type, name: request.body.name },
      { userId: access.userId, keyId: access.keyId },
    );
    return reply.code(201).send({ success: true as const, data: { ...created.key, key: created.secret } });
  });

  app.delete('/api/v1/keys/:id', {
    schema: {
      tags: ['keys'], summary: 'Revoke an API key (workspace admins; personal keys by their owner)',
      params: z.object({ id: z.string().min(1).max(128) }),
      response: { 200: z.object({ success: z.literal(true), data: z.object({ id: z.string(), revoked: z.literal(true) }) }), ...errorResponses },
    },
  }, async (request) => {
    const auth = requireAuth(request);
    const key = isUuid(request.params.id) ? await store.findKey(db, request.params.id) : undefined;
    if (!key || key.revoked_at) throw new HttpError(404, 'API key not found');
    let auditWorkspace: string;
    if (key.type === 'workspace' && key.workspace_id) {
      await authorizeWorkspace(db, request, key.workspace_id, 'admin', { conceal: true, notFoundMessage: 'API key not found' });
      auditWorkspace = key.workspace_id;
    } else {
      if (key.user_id !== auth.userId) throw new HttpError(404, 'API key not found');
      const home = auth.keyWorkspaceId
        ?? (await db.query<{ workspace_id: string }>('SELECT workspace_id FROM memberships WHERE user_id = $1 ORDER BY created_at LIMIT 1', [auth.userId]))[0]?.workspace_id;
      if (!home) throw new HttpError(404, 'API key not found');
      auditWorkspace = home;
    }
    await service.revokeKey(db, key.id, auditWorkspace, { userId: auth.userId, keyId: auth.keyId });
    ctx.keys.forget(key.id);
    return { success: true as const, data: { id: key.id, revoked: true as const } };
  });

  app.get('/api/v1/workspaces/:id', {
    schema: {
      tags: ['workspaces'], summary: 'Get a workspace and its settings',
      params: z.object({ id: z.string().min(1).max(128) }),
      response: { 200: z.object({ success: z.literal(true), data: z.object({ workspace: workspaceSchema }) }), ...errorResponses },
    },
  }, async (request) => {
    const access = await authorizeWorkspace(db, request, request.params.id, 'read', { conceal: true });
    const ws = await store.findWorkspace(db, access.workspaceId);
    if (!ws) throw new HttpError(404, 'Workspace not found');
    return { success: true as const, data: { workspace: publicWorkspace(ws) } };
  });

  app.patch('/api/v1/workspaces/:id/settings', {
    schema: {
      tags: ['workspaces'], summary: 'Change workspace settings (workspace admins): allowPersonalKeys',
      params: z.object({ id: z.string().min(1).max(128) }),
      body: z.object({ allowPersonalKeys: z.boolean() }).strict(),
      response: { 200: z.object({ success: z.literal(true), data: z.object({ workspace: workspaceSchema }) }), ...errorResponses },
    },
  }, async (request) => {
    const access = await authorizeWorkspace(db, request, request.params.id, 'admin', { conceal: true });
    const ws = await service.setAllowPersonalKeys(db, access.workspaceId, request.body.allowPersonalKeys, {
      userId: access.userId, keyId: access.keyId,
    });
    if (!ws) throw new HttpError(404, 'Workspace not found');
    return { success: true as const, data: { workspace: publicWorkspace(ws) } };
  });

  app.put('/api/v1/workspaces/:id/members/:userId', {
    schema: {
      tags: ['workspaces'], summary: 'Add a user to the workspace or change their role (workspace admins)',
      params: z.object({ id: z.string().min(1).max(128), userId: z.string().min(1).max(128) }),
      body: z.object({ role: z.enum(['admin', 'write', 'read']) }).strict(),
      response: {
        200: z.object({ success: z.literal(true), data: z.object({ userId: z.string(), role: z.string() }) }),
        ...errorResponses,
      },
    },
  }, async (request) => {
    const access = await authorizeWorkspace(db, request, request.params.id, 'admin', { conceal: true });
    const user = isUuid(request.params.userId) ? await store.findUser(db, request.params.userId) : undefined;
    if (!user) throw new HttpError(404, 'User not found');
    await service.addMember(db, access.workspaceId, user.id, request.body.role, { userId: access.userId, keyId: access.keyId });
    return { success: true as const, data: { userId: user.id, role: request.body.role } };
  });
};
