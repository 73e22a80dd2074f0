import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { requireAuth } from '../http/auth.js';
import { HttpError } from '../http/errors.js';
import { isUuid } from '../ids.js';
import { errorResponses } from '../http/schemas.js';
import { actorOf, publicKey, type AccountsService, type WorkspaceRow } from './service.js';

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

const publicWorkspace = (w: WorkspaceRow) => ({
  id: w.id,
  name: w.name,
  allowPersonalKeys: w.allow_personal_keys,
  plan: w.plan,
  createdAt: w.created_at.toISOString(),
  updatedAt: w.updated_at.toISOString(),
});

/** Keys, workspaces and memberships. A workspace key acts as its workspace: it never mints personal keys or manages members. */
export function accountRoutes(accounts: AccountsService): FastifyPluginAsyncZod {
  return async (app) => {

  app.get('/api/v1/keys', {
    schema: {
      tags: ['keys'], summary: 'List the API keys usable in a workspace (workspace admins)',
      querystring: z.object({ workspaceId: z.string().min(1).max(128) }),
      response: { 200: z.object({ success: z.literal(true), data: z.object({ keys: z.array(keySchema) }) }), ...errorResponses },
    },
  }, async (request) => {
    const access = await accounts.authorize(request.auth, request.query.workspaceId, 'admin');
    const rows = await accounts.listKeys(access.workspaceId);
    return { success: true as const, data: { keys: rows.map(publicKey) } };
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
    const { type } = request.body;
    // A personal key is its owner's to make, with their own personal key; workspace keys are for workspace admins.
    const access = await accounts.authorize(request.auth, request.body.workspaceId, type === 'personal' ? 'read' : 'admin');
    if (type === 'personal' && access.keyType !== 'personal') {
      throw new HttpError(403, 'Workspace API keys cannot create personal keys; use a personal key of the user or the CLI');
    }
    const created = await accounts.createKey(
      { workspaceId: access.workspaceId, userId: access.userId, type, name: request.body.name },
      actorOf(access),
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
    const key = await accounts.findKey(request.params.id);
    if (!key || key.revoked_at) throw new HttpError(404, 'API key not found');
    if (key.type === 'workspace' && key.workspace_id) {
      const access = await accounts.authorize(auth, key.workspace_id, 'admin', { conceal: true, notFoundMessage: 'API key not found' });
      await accounts.revokeKey(key.id, key.workspace_id, actorOf(access));
    } else {
      // Personal keys are their owner's: only the owner's own personal keys reach them.
      if (auth.keyType !== 'personal' || key.user_id !== auth.userId) throw new HttpError(404, 'API key not found');
      const home = await accounts.homeWorkspaceOf(auth.userId);
      await accounts.revokeKey(key.id, home, { userId: auth.userId, keyId: auth.keyId, type: auth.via === 'session' ? 'session' : 'personal_key' });
    }
    return { success: true as const, data: { id: key.id, revoked: true as const } };
  });

  app.get('/api/v1/workspaces/:id', {
    schema: {
      tags: ['workspaces'], summary: 'Get a workspace and its settings',
      params: z.object({ id: z.string().min(1).max(128) }),
      response: { 200: z.object({ success: z.literal(true), data: z.object({ workspace: workspaceSchema }) }), ...errorResponses },
    },
  }, async (request) => {
    const access = await accounts.authorize(request.auth, request.params.id, 'read', { conceal: true });
    const ws = await accounts.findWorkspace(access.workspaceId);
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
    const access = await accounts.authorize(request.auth, request.params.id, 'admin', { conceal: true });
    const ws = await accounts.setAllowPersonalKeys(access.workspaceId, request.body.allowPersonalKeys, actorOf(access));
    if (!ws) throw new HttpError(404, 'Workspace not found');
    return { success: true as const, data: { workspace: publicWorkspace(ws) } };
  });

  app.put('/api/v1/workspaces/:id/members/:userId', {
    schema: {
      tags: ['workspaces'], summary: 'Change a member\'s role (workspace admins), or add a user to the workspace (instance administrators)',
      params: z.object({ id: z.string().min(1).max(128), userId: z.string().min(1).max(128) }),
      body: z.object({ role: z.enum(['admin', 'write', 'read']) }).strict(),
      response: {
        200: z.object({ success: z.literal(true), data: z.object({ userId: z.string(), role: z.string() }) }),
        ...errorResponses,
      },
    },
  }, async (request) => {
    const access = await accounts.authorize(request.auth, request.params.id, 'admin', { conceal: true });
    if (access.keyType !== 'personal') throw new HttpError(403, 'Workspace API keys cannot manage members; use a personal key of a workspace admin or the CLI');
    const user = await accounts.findUser(request.params.userId);
    if (!user) throw new HttpError(404, 'User not found');
    // Adding someone is for instance administrators (and the CLI): a workspace admin could otherwise enrol any
    // user of the instance without their say, and see their personal keys' names in the key list.
    if (!(await accounts.roleOf(access.workspaceId, user.id)) && !(await accounts.isInstanceAdmin(access.userId))) {
      throw new HttpError(403, 'Only instance administrators add users to a workspace; workspace admins change the roles of its members and remove them');
    }
    await accounts.addMember(access.workspaceId, user.id, request.body.role, actorOf(access));
    return { success: true as const, data: { userId: user.id, role: request.body.role } };
  });

  app.delete('/api/v1/workspaces/:id/members/:userId', {
    schema: {
      tags: ['workspaces'],
      summary: 'Remove a user from the workspace (workspace admins): their keys, sessions and the workspace keys they created no longer reach it',
      params: z.object({ id: z.string().min(1).max(128), userId: z.string().min(1).max(128) }),
      response: {
        200: z.object({ success: z.literal(true), data: z.object({ userId: z.string(), removed: z.literal(true) }) }),
        ...errorResponses,
      },
    },
  }, async (request) => {
    const access = await accounts.authorize(request.auth, request.params.id, 'admin', { conceal: true });
    if (access.keyType !== 'personal') throw new HttpError(403, 'Workspace API keys cannot manage members; use a personal key of a workspace admin or the CLI');
    if (!isUuid(request.params.userId)) throw new HttpError(404, 'Member not found');
    await accounts.removeMember(access.workspaceId, request.params.userId, actorOf(access));
    return { success: true as const, data: { userId: request.params.userId, removed: true as const } };
  });
};
}
