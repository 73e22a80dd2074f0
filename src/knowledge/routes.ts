import { Readable } from 'node:stream';
import type { FastifySchemaCompiler } from 'fastify';
import type { FastifyRouteSchemaDef } from 'fastify/types/schema.js';
import { validatorCompiler, type FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { actorOf, type AccessControlled } from '../accounts/service.js';
import { holdsUnstorableString, storableText } from '../db/storable-text.js';
import { HttpError } from '../http/errors.js';
import { errorSchema } from '../http/schemas.js';
import {
  baseDescription, baseName, chunk, chunkingConfig, chunksQuery, documentsQuery, errorResponses, filenameField, jsonUpload, knowledgeBase, knowledgeDocument,
  knowledgeDocumentDetail, ok, pagination, searchBody, searchResultItem, tags, tagValues, uploadErrors, workspaceId, workspaceQuery, writeErrors,
} from './schemas.js';
import { tagDefinitionRoutes } from './tag-routes.js';
import type { KnowledgeService, UploadedFile } from './service.js';
import { MAX_DOCUMENT_WAIT_SECONDS, readWhenProcessed } from './document-wait.js';
import { readUploadForm } from './upload-body.js';

/** HTTP surface of knowledge bases: parse, authorize, shape. Logic lives in the KnowledgeService. */

const baseParams = z.object({ id: z.string().min(1).max(128) });
const documentParams = baseParams.extend({ documentId: z.string().min(1).max(128) });

/** Multipart uploads reach the handler as a stream; JSON bodies are validated by the route's zod schema. */
function streamOrZod<S>(route: FastifyRouteSchemaDef<S>): ReturnType<FastifySchemaCompiler<S>> {
  const zod = validatorCompiler(route as unknown as FastifyRouteSchemaDef<z.ZodType>);
  return (data: unknown) => (data instanceof Readable ? { value: data } : zod(data));
}

/** Room for a base64-encoded file of the largest size in a JSON body. */
const jsonUploadLimit = (maxFileBytes: number) => Math.ceil(maxFileBytes / 3) * 4 + 1024 * 1024;

export function knowledgeRoutes(service: KnowledgeService, accounts: AccessControlled, maxFileBytes: number): FastifyPluginAsyncZod {
  return async (app) => {
    const tags_ = ['knowledge'];
    // Encapsulated: only these routes take multipart bodies, as a stream read by the upload handler.
    app.addContentTypeParser('multipart/form-data', (_req, payload, done) => done(null, payload));

    app.post('/api/v1/knowledge', {
      schema: {
        tags: tags_, summary: 'Create a knowledge base',
        body: z.object({ workspaceId, name: baseName, description: baseDescription.optional(), chunkingConfig: chunkingConfig.partial().optional() }),
        response: { 200: ok(z.object({ knowledgeBase, message: z.string() })), ...writeErrors },
      },
    }, async (request) => {
      const access = await accounts.authorize(request.auth, request.body.workspaceId, 'write');
      const created = await service.createBase(access.workspaceId, request.body, actorOf(access));
      return { success: true as const, data: { knowledgeBase: created, message: 'Knowledge base created successfully' } };
    });

    app.get('/api/v1/knowledge', {
      schema: {
        tags: tags_, summary: 'List the knowledge bases of a workspace',
        querystring: workspaceQuery,
        response: { 200: ok(z.object({ knowledgeBases: z.array(knowledgeBase), totalCount: z.number().int() })), ...errorResponses },
      },
    }, async (request) => {
      const access = await accounts.authorize(request.auth, request.query.workspaceId, 'read');
      const knowledgeBases = await service.listBases(access.workspaceId);
      return { success: true as const, data: { knowledgeBases, totalCount: knowledgeBases.length } };
    });

    app.get('/api/v1/knowledge/:id', {
      schema: {
        tags: tags_, summary: 'Get a knowledge base', params: baseParams, querystring: workspaceQuery,
        response: { 200: ok(z.object({ knowledgeBase })), ...errorResponses },
      },
    }, async (request) => {
      const access = await accounts.authorize(request.auth, request.query.workspaceId, 'read');
      return { success: true as const, data: { knowledgeBase: await service.getBase(access.workspaceId, request.params.id) } };
    });

    app.put('/api/v1/knowledge/:id', {
      schema: {
        tags: tags_, summary: 'Rename, describe or re-configure chunking (applies to later uploads)', params: baseParams,
        body: z.object({ workspaceId, name: baseName.optional(), description: baseDescription.optional(), chunkingConfig: chunkingConfig.optional() })
          .refine((b) => b.name !== undefined || b.description !== undefined || b.chunkingConfig !== undefined, {
            message: 'At least one of name, description, or chunkingConfig must be provided',
          }),
        response: { 200: ok(z.object({ knowledgeBase, message: z.string() })), ...writeErrors },
      },
    }, async (request) => {
      const access = await accounts.authorize(request.auth, request.body.workspaceId, 'write');
      const updated = await service.updateBase(access.workspaceId, request.params.id, request.body, actorOf(access));
      return { success: true as const, data: { knowledgeBase: updated, message: 'Knowledge base updated successfully' } };
    });

    app.delete('/api/v1/knowledge/:id', {
      schema: {
        tags: tags_, summary: 'Delete a knowledge base with its documents', params: baseParams, querystring: workspaceQuery,
        response: { 200: ok(z.object({ message: z.string() })), ...errorResponses },
      },
    }, async (request) => {
      const access = await accounts.authorize(request.auth, request.query.workspaceId, 'write');
      await service.deleteBase(access.workspaceId, request.params.id, actorOf(access));
      return { success: true as const, data: { message: 'Knowledge base deleted successfully' } };
    });

    app.post('/api/v1/knowledge/search', {
      schema: {
        tags: tags_, summary: 'Search knowledge bases by similarity',
        body: searchBody,
        response: {
          200: ok(z.object({
            results: z.array(searchResultItem), query: z.string(), knowledgeBaseIds: z.array(z.string()), topK: z.number().int(),
            totalResults: z.number().int(), mode: z.enum(['vector', 'hybrid']),
          })),
          ...errorResponses,
          402: errorSchema, // a search with a query while the billed account is over its usage limit (usage-gate.ts)
          429: errorSchema, // too many of the workspace's searches wait (limits/workspace-gate.ts)
          503: errorSchema, // the embedding model is away
        },
      },
    }, async (request) => {
      const body = request.body;
      const access = await accounts.authorize(request.auth, body.workspaceId, 'read');
      const { results, mode } = await service.search(
        { workspaceId: access.workspaceId, billedAccount: access.billedAccount, plan: access.plan },
        {
          knowledgeBaseIds: body.knowledgeBaseIds, query: body.query, topK: body.topK, filters: body.filters, tagFilters: body.tagFilters,
          mode: body.searchMode ?? body.mode,
        },
      );
      return {
        success: true as const,
        data: { results, query: body.query ?? '', knowledgeBaseIds: body.knowledgeBaseIds, topK: body.topK, totalResults: results.length, mode },
      };
    });

    tagDefinitionRoutes(app, service, accounts);

    app.get('/api/v1/knowledge/:id/documents', {
      schema: {
        tags: tags_, summary: 'List the documents of a knowledge base', params: baseParams, querystring: documentsQuery,
        response: { 200: ok(z.object({ documents: z.array(knowledgeDocument), pagination })), ...errorResponses },
      },
    }, async (request) => {
      const q = request.query;
      const access = await accounts.authorize(request.auth, q.workspaceId, 'read');
      const data = await service.listDocuments(access.workspaceId, {
        baseId: request.params.id, limit: q.limit, offset: q.offset, search: q.search, sortBy: q.sortBy, sortOrder: q.sortOrder,
        enabled: q.enabledFilter === 'all' ? undefined : q.enabledFilter === 'enabled',
      });
      return { success: true as const, data };
    });

    app.post('/api/v1/knowledge/:id/documents', {
      bodyLimit: jsonUploadLimit(maxFileBytes),
      validatorCompiler: streamOrZod,
      schema: {
        tags: tags_,
        summary: 'Upload documents: multipart/form-data (workspaceId, one or more file fields, optional tags as JSON) or JSON',
        description: 'Processing runs in the background: the documents answer `pending`, then `processing`, then `completed` or `failed`.',
        params: baseParams,
        body: jsonUpload,
        response: {
          200: ok(z.object({ document: knowledgeDocument, documents: z.array(knowledgeDocument), message: z.string() })),
          ...uploadErrors,
          402: errorSchema, // the billed account is over its usage limit (usage-gate.ts)
        },
      },
    }, async (request) => {
      const body: unknown = request.body;
      let ws: string;
      let files: UploadedFile[];
      let extra: { tags?: Record<string, unknown>; tagValues?: Record<string, unknown>; sourceUrl?: string | null } = {};
      if (body instanceof Readable) {
        const form = await readUploadForm(body, request.headers, maxFileBytes);
        const given = form.fields.workspaceId;
        if (!given) throw new HttpError(400, 'workspaceId form field is required');
        if (form.files.length === 0) throw new HttpError(400, 'file form field is required');
        ws = given;
        files = form.files.map((f) => ({ filename: f.filename, mimeType: f.mimeType, bytes: f.bytes }));
        extra = {
          tags: parseJsonField(form.fields.tags, 'tags', tags), tagValues: parseJsonField(form.fields.tagValues, 'tagValues', tagValues),
          sourceUrl: parseSourceUrlField(form.fields.sourceUrl),
        };
      } else {
        const b = body as z.infer<typeof jsonUpload>;
        ws = b.workspaceId;
        const bytes = b.content !== undefined ? Buffer.from(b.content, 'utf8') : decodeBase64(b.contentBase64 ?? '');
        files = [{ filename: b.filename, mimeType: b.mimeType ?? (b.content !== undefined ? 'text/plain' : undefined), bytes }];
        extra = { tags: b.tags, tagValues: b.tagValues, sourceUrl: b.sourceUrl ?? null };
      }
      const access = await accounts.authorize(request.auth, ws, 'write');
      const documents = await service.upload(
        { workspaceId: access.workspaceId, billedAccount: access.billedAccount, plan: access.plan }, request.params.id, files, extra, actorOf(access),
      );
      return {
        success: true as const,
        data: {
          document: documents[0] as (typeof documents)[number], documents,
          message: `${documents.length === 1 ? 'Document' : `${documents.length} documents`} uploaded successfully. Processing will begin shortly.`,
        },
      };
    });

    // Long-polls (`wait`) end when the server closes rather than holding its shutdown.
    const closing = new AbortController();
    app.addHook('preClose', async () => closing.abort());
    app.get('/api/v1/knowledge/:id/documents/:documentId', {
      schema: {
        tags: tags_, summary: 'Get a document and its processing state', params: documentParams,
        querystring: workspaceQuery.extend({
          wait: z.coerce.number().int().min(0).max(MAX_DOCUMENT_WAIT_SECONDS).optional().describe(
            `Seconds (0 to ${MAX_DOCUMENT_WAIT_SECONDS}) to wait while the document is pending or processing: the answer comes once it is completed or failed, or when the time is up`,
          ),
        }),
        response: { 200: ok(z.object({ document: knowledgeDocumentDetail })), ...errorResponses },
      },
    }, async (request, reply) => {
      const access = await accounts.authorize(request.auth, request.query.workspaceId, 'read');
      const read = () => service.getDocument(access.workspaceId, request.params.id, request.params.documentId);
      const waitSeconds = request.query.wait ?? 0;
      if (waitSeconds === 0) return { success: true as const, data: { document: await read() } };
      const gone = new AbortController();
      reply.raw.once('close', () => gone.abort());
      const document = await readWhenProcessed(read, waitSeconds * 1000, AbortSignal.any([gone.signal, closing.signal]));
      return { success: true as const, data: { document } };
    });

    app.patch('/api/v1/knowledge/:id/documents/:documentId', {
      schema: {
        tags: tags_, summary: 'Enable or disable a document (disabled ones are not searched), rename it, or replace its tags',
        params: documentParams,
        body: z.object({
          workspaceId, enabled: z.boolean().optional(), filename: filenameField.optional(), tags: tags.optional(), tagValues: tagValues.optional(),
        }).refine((b) => b.enabled !== undefined || b.filename !== undefined || b.tags !== undefined || b.tagValues !== undefined, {
          message: 'At least one of enabled, filename, tags, or tagValues must be provided',
        }),
        response: { 200: ok(z.object({ document: knowledgeDocumentDetail, message: z.string() })), ...errorResponses },
      },
    }, async (request) => {
      const { workspaceId: ws, ...changes } = request.body;
      const access = await accounts.authorize(request.auth, ws, 'write');
      const document = await service.updateDocument(access.workspaceId, request.params.id, request.params.documentId, changes, actorOf(access));
      return { success: true as const, data: { document, message: 'Document updated successfully' } };
    });

    app.delete('/api/v1/knowledge/:id/documents/:documentId', {
      schema: {
        tags: tags_, summary: 'Delete a document and its chunks', params: documentParams, querystring: workspaceQuery,
        response: { 200: ok(z.object({ message: z.string() })), ...errorResponses },
      },
    }, async (request) => {
      const access = await accounts.authorize(request.auth, request.query.workspaceId, 'write');
      await service.deleteDocument(access.workspaceId, request.params.id, request.params.documentId, actorOf(access));
      return { success: true as const, data: { message: 'Document deleted successfully' } };
    });

    app.get('/api/v1/knowledge/:id/documents/:documentId/chunks', {
      schema: {
        tags: tags_, summary: 'The chunks of a document, in order', params: documentParams, querystring: chunksQuery,
        response: { 200: ok(z.object({ chunks: z.array(chunk), pagination })), ...errorResponses },
      },
    }, async (request) => {
      const q = request.query;
      const access = await accounts.authorize(request.auth, q.workspaceId, 'read');
      const data = await service.listChunks(access.workspaceId, request.params.id, request.params.documentId, { limit: q.limit, offset: q.offset });
      return { success: true as const, data };
    });
  };
}

/** Why a multipart field cannot be stored, as the JSON body parser words it (http/json-body.ts). */
const unstorableField = (name: string) =>
  new HttpError(400, `${name} holds a NUL character (\\u0000) or an unpaired surrogate, which cannot be stored`);

/**
 * A multipart field holding JSON. The JSON body parser refuses text the databases cannot store before any
 * route sees it; a form field's JSON never meets that parser, so it is checked here, keys included.
 */
function parseJsonField(text: string | undefined, name: string, schema: z.ZodType<Record<string, unknown>>): Record<string, unknown> | undefined {
  if (text === undefined || text === '') return undefined;
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new HttpError(400, `${name} must be a JSON object`);
  }
  if (holdsUnstorableString(value)) throw unstorableField(name);
  const parsed = schema.safeParse(value);
  if (!parsed.success) throw new HttpError(400, `${name}: ${parsed.error.issues[0]?.message ?? 'invalid'}`);
  return parsed.data;
}

function parseSourceUrlField(text: string | undefined): string | null {
  if (text === undefined || text === '') return null;
  if (!storableText(text)) throw unstorableField('sourceUrl');
  const parsed = z.string().url().max(2048).safeParse(text);
  if (!parsed.success) throw new HttpError(400, 'sourceUrl must be a URL of at most 2048 characters');
  return parsed.data;
}

function decodeBase64(text: string): Buffer {
  const clean = text.replace(/\s+/g, '');
  if (!/^[A-Za-z0-9+/_-]*={0,2}$/.test(clean)) throw new HttpError(400, 'contentBase64 is not valid base64');
  return Buffer.from(clean, 'base64');
}
