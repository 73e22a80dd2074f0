import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { actorOf, type AccessControlled } from '../accounts/service.js';
import type { AuthContext } from '../http/auth.js';
import { HttpError } from '../http/errors.js';
import { decodeCursor } from '../http/pagination.js';
import { errorResponses, errorSchema } from '../http/schemas.js';
import { MAX_CONNECTORS, MAX_LIST_PAGE_BYTES, type ConnectorsService } from './service.js';

const notFound = { conceal: true, notFoundMessage: 'Connector not found' } as const;

const authSchema = z.strictObject({
  type: z.enum(['bearer', 'header', 'query', 'basic']),
  secret: z.string().regex(/^[A-Z][A-Z0-9_]{0,63}$/, 'secret must be a secret name such as API_TOKEN').describe('Name of a workspace secret (never a value); basic: the secret holds "user:password"'),
  name: z.string().regex(/^[A-Za-z0-9!#$%&'*+.^_`|~-]{1,128}$/, 'name must be a header or query parameter name').optional().describe('Header (header) or query parameter (query) name'),
});

const specFields = {
  name: z.string().trim().min(1).max(200),
  spec: z.record(z.string(), z.unknown()).optional().describe('An OpenAPI 3.0 or 3.1 document as JSON'),
  specUrl: z.string().min(1).max(2048).optional().describe('http(s) URL of a JSON OpenAPI document, fetched through the outbound guard (5 MiB, 15 s)'),
  baseUrl: z.string().min(1).max(2048).optional().describe("Overrides the document's servers"),
  auth: authSchema.nullable().optional(),
};

const operationSchema = z.object({
  operationId: z.string(),
  method: z.string(),
  path: z.string(),
  summary: z.string(),
  description: z.string().optional(),
  parameters: z.record(z.string(), z.unknown()).describe('JSON Schema (an object) over the path, query and header parameters'),
  requestBody: z.record(z.string(), z.unknown()).nullable().describe('JSON Schema of the JSON request body, or null'),
});

const connectorSchema = z.object({
  id: z.string(),
  workspaceId: z.string(),
  name: z.string(),
  baseUrl: z.string(),
  auth: z.object({ type: z.string(), secret: z.string(), name: z.string().optional() }).nullable(),
  operations: z.array(operationSchema),
  createdAt: z.string(),
  updatedAt: z.string(),
});

const idParams = z.object({ id: z.string().min(1).max(128) });
const one = z.object({ success: z.literal(true), data: z.object({ connector: connectorSchema }) });

/**
 * Connectors: OpenAPI documents whose operations become `connector` blocks and agent tools. Another
 * workspace's connector (or one the key cannot reach) answers 404 like a missing one.
 */
export function connectorRoutes(connectors: ConnectorsService, accounts: AccessControlled): FastifyPluginAsyncZod {
  const access = async (auth: AuthContext | undefined, id: string, role: 'read' | 'write') => {
    const workspaceId = await connectors.workspaceOf(id);
    if (!workspaceId) throw new HttpError(404, 'Connector not found');
    return accounts.authorize(auth, workspaceId, role, notFound);
  };

  return async (app) => {
    app.post('/api/v1/connectors', {
      schema: {
        tags: ['connectors'],
        summary: 'Register an OpenAPI document as a connector (write role): its operations become blocks and agent tools',
        body: z.strictObject({ workspaceId: z.string().min(1).max(128), ...specFields }),
        // 429: the workspace has the most documents waiting to be read (connectors/openapi-parse.ts).
        response: { 201: one, ...errorResponses, 429: errorSchema },
      },
    }, async (request, reply) => {
      const a = await accounts.authorize(request.auth, request.body.workspaceId, 'write', notFound);
      const { workspaceId: _ws, ...input } = request.body;
      const connector = await connectors.create(a.workspaceId, input, actorOf(a));
      return reply.code(201).send({ success: true as const, data: { connector } });
    });

    app.get('/api/v1/connectors', {
      schema: {
        tags: ['connectors'],
        summary: 'List the connectors of a workspace with their operations, oldest first',
        description: `A page holds at most \`limit\` connectors and stops once it holds ${MAX_LIST_PAGE_BYTES / 1024 / 1024} MiB of stored connectors (at least one); \`nextCursor\` fetches the next.`,
        querystring: z.object({
          workspaceId: z.string().min(1).max(128),
          limit: z.coerce.number().int().min(1).max(MAX_CONNECTORS).default(MAX_CONNECTORS),
          cursor: z.string().max(512).optional(),
        }),
        response: { 200: z.object({ success: z.literal(true), data: z.object({ connectors: z.array(connectorSchema), nextCursor: z.string().optional() }) }), ...errorResponses },
      },
    }, async (request) => {
      const after = decodeCursor(request.query.cursor);
      const a = await accounts.authorize(request.auth, request.query.workspaceId, 'read', notFound);
      return { success: true as const, data: await connectors.list(a.workspaceId, { limit: request.query.limit, after }) };
    });

    app.get('/api/v1/connectors/:id', {
      schema: { tags: ['connectors'], summary: 'One connector with its operations', params: idParams, response: { 200: one, ...errorResponses } },
    }, async (request) => {
      const a = await access(request.auth, request.params.id, 'read');
      return { success: true as const, data: { connector: await connectors.get(a.workspaceId, request.params.id) } };
    });

    app.get('/api/v1/connectors/:id/operations', {
      schema: {
        tags: ['connectors'], summary: "A connector's operations with their JSON Schemas", params: idParams,
        response: { 200: z.object({ success: z.literal(true), data: z.object({ operations: z.array(operationSchema) }) }), ...errorResponses },
      },
    }, async (request) => {
      const a = await access(request.auth, request.params.id, 'read');
      return { success: true as const, data: { operations: (await connectors.get(a.workspaceId, request.params.id)).operations } };
    });

    app.put('/api/v1/connectors/:id', {
      schema: {
        tags: ['connectors'], summary: 'Replace a connector (write role): name, document, base URL and auth',
        params: idParams, body: z.strictObject(specFields), response: { 200: one, ...errorResponses, 429: errorSchema },
      },
    }, async (request) => {
      const a = await access(request.auth, request.params.id, 'write');
      const connector = await connectors.replace(a.workspaceId, request.params.id, request.body, actorOf(a));
      return { success: true as const, data: { connector } };
    });

    app.delete('/api/v1/connectors/:id', {
      schema: {
        tags: ['connectors'], summary: 'Delete a connector (write role); workflows that call it fail naming it',
        params: idParams,
        response: { 200: z.object({ success: z.literal(true), data: z.object({ id: z.string(), deleted: z.literal(true) }) }), ...errorResponses },
      },
    }, async (request) => {
      const a = await access(request.auth, request.params.id, 'write');
      await connectors.delete(a.workspaceId, request.params.id, actorOf(a));
      return { success: true as const, data: { id: request.params.id, deleted: true as const } };
    });
  };
}
