import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { AccessControlled } from '../accounts/service.js';
import { errorResponses, ok, tagDefinition, tagDefinitionBody, workspaceQuery, writeErrors } from './schemas.js';
import type { KnowledgeService } from './service.js';

/** HTTP surface of typed tag definitions (Weft's extension under /api/v1; the reference keeps them in its app API). */

type App = Parameters<FastifyPluginAsyncZod>[0];

const baseParams = z.object({ id: z.string().min(1).max(128) });

export function tagDefinitionRoutes(app: App, service: KnowledgeService, accounts: AccessControlled): void {
  const tags = ['knowledge'];

  app.get('/api/v1/knowledge/:id/tag-definitions', {
    schema: {
      tags, summary: 'List the typed tag slots a knowledge base has named', params: baseParams, querystring: workspaceQuery,
      response: { 200: ok(z.object({ tagDefinitions: z.array(tagDefinition) })), ...errorResponses },
    },
  }, async (request) => {
    const access = await accounts.authorize(request.auth, request.query.workspaceId, 'read');
    return { success: true as const, data: { tagDefinitions: await service.tags.list(access.workspaceId, request.params.id) } };
  });

  app.post('/api/v1/knowledge/:id/tag-definitions', {
    schema: {
      tags, summary: 'Name a typed tag slot (text, number, date or boolean) that documents can carry and searches can filter on',
      params: baseParams, body: tagDefinitionBody,
      response: { 200: ok(z.object({ tagDefinition, message: z.string() })), ...writeErrors },
    },
  }, async (request) => {
    const { workspaceId, ...input } = request.body;
    const access = await accounts.authorize(request.auth, workspaceId, 'write');
    const created = await service.tags.create(access.workspaceId, request.params.id, input);
    return { success: true as const, data: { tagDefinition: created, message: 'Tag definition created successfully' } };
  });

  app.delete('/api/v1/knowledge/:id/tag-definitions/:tagId', {
    schema: {
      tags, summary: "Delete a tag definition and clear its slot on the base's documents",
      params: baseParams.extend({ tagId: z.string().min(1).max(128) }), querystring: workspaceQuery,
      response: { 200: ok(z.object({ message: z.string() })), ...errorResponses },
    },
  }, async (request) => {
    const access = await accounts.authorize(request.auth, request.query.workspaceId, 'write');
    await service.tags.delete(access.workspaceId, request.params.id, request.params.tagId);
    return { success: true as const, data: { message: 'Tag definition deleted successfully' } };
  });
}
