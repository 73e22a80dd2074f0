import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { actorOf, type AccessControlled } from '../accounts/service.js';
import { errorResponses, errorSchema } from '../http/schemas.js';
import { SECRET_NAME_PATTERN, SECRET_NAME_RULE, type SecretsService } from './service.js';

const secretSchema = z.object({
  name: z.string(),
  createdAt: z.string(),
  updatedAt: z.string(),
  lastUsedAt: z.string().nullable().describe('When a run last resolved it (written at most once a minute per secret)'),
});

const nameParams = z.object({ name: z.string().regex(SECRET_NAME_PATTERN, SECRET_NAME_RULE).describe(SECRET_NAME_RULE) });
const workspaceQuery = z.object({ workspaceId: z.string().min(1).max(128) });
const notFound = { conceal: true, notFoundMessage: 'Secret not found' } as const;

/**
 * Workspace secrets. No route ever returns a value: they are written here and read only by runs. Another
 * workspace's secrets (and a workspace the key cannot reach) answer 404, like missing ones.
 */
export function secretRoutes(secrets: SecretsService, accounts: AccessControlled): FastifyPluginAsyncZod {
  return async (app) => {
    app.put('/api/v1/secrets/:name', {
      schema: {
        tags: ['secrets'],
        summary: 'Create or replace a secret (write role); referenced as {{NAME}} in block fields, never returned',
        params: nameParams,
        body: z.object({
          workspaceId: z.string().min(1).max(128),
          value: z.string().min(1, 'value must be a non-empty string').describe('At most 64 KiB of UTF-8 (413 beyond)'),
        }),
        response: {
          200: z.object({ success: z.literal(true), data: z.object({ name: z.string(), created: z.literal(false) }) }).describe('Replaced'),
          201: z.object({ success: z.literal(true), data: z.object({ name: z.string(), created: z.literal(true) }) }).describe('Created'),
          ...errorResponses,
          413: errorSchema,
        },
      },
    }, async (request, reply) => {
      const access = await accounts.authorize(request.auth, request.body.workspaceId, 'write', notFound);
      const { created } = await secrets.set(access.workspaceId, request.params.name, request.body.value, actorOf(access));
      const name = request.params.name;
      return created
        ? reply.code(201).send({ success: true as const, data: { name, created: true as const } })
        : reply.code(200).send({ success: true as const, data: { name, created: false as const } });
    });

    app.get('/api/v1/secrets', {
      schema: {
        tags: ['secrets'], summary: 'List the secrets of a workspace: names and dates, never values',
        querystring: workspaceQuery,
        response: { 200: z.object({ success: z.literal(true), data: z.object({ secrets: z.array(secretSchema) }) }), ...errorResponses },
      },
    }, async (request) => {
      const access = await accounts.authorize(request.auth, request.query.workspaceId, 'read', notFound);
      return { success: true as const, data: { secrets: await secrets.list(access.workspaceId) } };
    });

    app.delete('/api/v1/secrets/:name', {
      schema: {
        tags: ['secrets'],
        summary: 'Delete a secret (write role); the answer lists deployed workflows that reference it (their runs now fail naming it)',
        params: z.object({ name: z.string().min(1).max(128) }),
        querystring: workspaceQuery,
        response: {
          200: z.object({
            success: z.literal(true),
            data: z.object({
              name: z.string(),
              deleted: z.literal(true),
              usedBy: z.array(z.object({ id: z.string(), name: z.string() })).describe('Deployed workflows whose active version references it'),
            }),
          }),
          ...errorResponses,
        },
      },
    }, async (request) => {
      const access = await accounts.authorize(request.auth, request.query.workspaceId, 'write', notFound);
      const { usedBy } = await secrets.delete(access.workspaceId, request.params.name, actorOf(access));
      return { success: true as const, data: { name: request.params.name, deleted: true as const, usedBy } };
    });
  };
}
