import { z } from 'zod';
import { storableText } from '../db/storable-text.js';
import { errorSchema, errorResponses } from '../http/schemas.js';
import { DOCUMENT_SORT_COLUMNS } from './store.js';
import { TAG_SLOTS } from './tag-filter-sql.js';
import { CHUNKING_BOUNDS } from './wire-format.js';

/** Zod schemas of the knowledge routes: they validate requests and document the API. */

export const workspaceId = z
  .string({ error: (iss) => (iss.input === undefined ? 'workspaceId is required' : 'workspaceId must be a string') })
  .min(1)
  .max(128)
  .describe('Workspace id');
export const workspaceQuery = z.object({ workspaceId });

const bounded = (name: keyof typeof CHUNKING_BOUNDS, unit: string) => {
  const b = CHUNKING_BOUNDS[name];
  return z.number({ error: `${name} must be a number` })
    .int(`${name} must be an integer`)
    .min(b.min, `${name} must be at least ${b.min}`)
    .max(b.max, `${name} must be at most ${b.max}`)
    .describe(`${unit}, ${b.min}..${b.max}, default ${b.default}`);
};

export const chunkingConfig = z.object({
  maxSize: bounded('maxSize', 'Largest chunk in tokens'),
  minSize: bounded('minSize', 'Smallest chunk in characters (a smaller tail joins the chunk before it)'),
  overlap: bounded('overlap', 'Tokens each chunk repeats from the end of the previous one'),
});

export const baseName = z.string().trim().min(1, 'name must not be empty').max(255, 'name must be at most 255 characters');
export const baseDescription = z.string().max(10_000, 'description must be at most 10000 characters');

export const knowledgeBase = z.object({
  id: z.string(),
  name: z.string(),
  description: z.string(),
  docCount: z.number().int(),
  tokenCount: z.number().int(),
  embeddingModel: z.string(),
  embeddingDimension: z.number().int(),
  chunkingConfig: z.object({ maxSize: z.number().int(), minSize: z.number().int(), overlap: z.number().int() }),
  connectorTypes: z.array(z.string()).describe('Connector types syncing documents into the base: always empty (documents are uploaded)'),
  createdAt: z.string(),
  updatedAt: z.string(),
}).describe('Knowledge base');

export const processingStatus = z.enum(['pending', 'processing', 'completed', 'failed']);

export const knowledgeDocument = z.object({
  id: z.string(),
  knowledgeBaseId: z.string(),
  filename: z.string(),
  fileSize: z.number().int(),
  mimeType: z.string(),
  processingStatus,
  chunkCount: z.number().int(),
  tokenCount: z.number().int(),
  characterCount: z.number().int(),
  enabled: z.boolean(),
  tags: z.record(z.string(), z.unknown()),
  tagValues: z.record(z.string(), z.unknown()).describe('Typed tags by display name'),
  connectorId: z.string().nullable().describe('The connector that synced the document: always null (documents are uploaded)'),
  connectorType: z.string().nullable().describe('Its connector type: always null'),
  createdAt: z.string(),
  updatedAt: z.string(),
}).describe('Knowledge document');

export const knowledgeDocumentDetail = knowledgeDocument.extend({
  processingError: z.string().nullable().describe('Why processing failed (failed documents)'),
  processingStartedAt: z.string().nullable(),
  processingCompletedAt: z.string().nullable(),
  sourceUrl: z.string().nullable(),
});

export const tags = z.record(z.string().max(100), z.union([z.string().max(1000), z.number(), z.boolean()]))
  .refine((t) => Object.keys(t).length <= 50, 'at most 50 tags')
  .describe('Tags: searches can filter on them');

export const tagFieldType = z.enum(['text', 'number', 'date', 'boolean']);
const searchModeSchema = z.enum(['vector', 'hybrid']);

export const tagValues = z.record(z.string().min(1).max(100), z.union([z.string().max(1000), z.number(), z.boolean(), z.null()]))
  .refine((t) => Object.keys(t).length <= 17, 'at most 17 tag values')
  .describe('Typed tags by display name (defined with /tag-definitions); null clears one');

export const tagFilter = z.object({
  tagName: z.string({ error: 'tagName is required' }).min(1).max(100),
  fieldType: tagFieldType.optional().describe('Ignored: the definition decides the type'),
  operator: z.enum(['eq', 'neq', 'contains', 'not_contains', 'starts_with', 'ends_with', 'gt', 'gte', 'lt', 'lte', 'between']).default('eq')
    .describe('text: eq neq contains not_contains starts_with ends_with (case-insensitive); number and date: eq neq gt gte lt lte between; boolean: eq neq'),
  value: z.union([z.string(), z.number(), z.boolean()]),
  valueTo: z.union([z.string(), z.number()]).optional().describe('Upper bound of between (inclusive)'),
});

export const searchResultItem = z.object({
  documentId: z.string(),
  documentName: z.string(),
  knowledgeBaseId: z.string(),
  sourceUrl: z.string().nullable(),
  content: z.string(),
  chunkIndex: z.number().int(),
  similarity: z.number().min(0).max(1).describe('1 minus the cosine distance, clamped to [0, 1] (exactly 1 for tag-only searches): higher is closer. Vector hits are those below a cosine distance of 1.0 (0.8 over more than 3 bases); full-text hits of hybrid search have no cutoff'),
  metadata: z.record(z.string(), z.unknown()).describe("The chunk's metadata (page, headings, rows, sheet) and its document's typed tags by display name; a tag wins over a metadata key of the same name"),
}).describe('Search result item');

export const pagination = z.object({ total: z.number().int(), limit: z.number().int(), offset: z.number().int(), hasMore: z.boolean() });

const intParam = (name: string, min: number, max: number, def: number) =>
  z.coerce.number({ error: `${name} must be an integer` })
    .int(`${name} must be an integer`).min(min, `${name} must be at least ${min}`).max(max, `${name} must be at most ${max}`)
    .default(def);

export const documentsQuery = workspaceQuery.extend({
  limit: intParam('limit', 1, 100, 50),
  offset: intParam('offset', 0, 1_000_000_000, 0),
  // A query string never meets the JSON body parser's check: a NUL (%00) would reach PostgreSQL, which refuses it.
  search: z.string().max(255).refine(storableText, 'must not contain a NUL character (%00)').optional().describe('Filename contains (case-insensitive)'),
  enabledFilter: z.enum(['all', 'enabled', 'disabled']).default('all'),
  sortBy: z.enum(Object.keys(DOCUMENT_SORT_COLUMNS) as [keyof typeof DOCUMENT_SORT_COLUMNS]).default('uploadedAt'),
  sortOrder: z.enum(['asc', 'desc']).default('desc'),
});

export const chunksQuery = workspaceQuery.extend({
  limit: intParam('limit', 1, 100, 50),
  offset: intParam('offset', 0, 1_000_000_000, 0),
});

export const chunk = z.object({
  chunkIndex: z.number().int(),
  content: z.string(),
  tokenCount: z.number().int(),
  characterCount: z.number().int(),
  metadata: z.record(z.string(), z.unknown()).describe('Where the chunk came from: page, headings, rows, sheet'),
});

/** Checked by `cleanFilename` (filename.ts), the same check multipart names pass. */
export const filenameField = z.string().describe('At most 255 characters, no control characters; a directory part is dropped');

/** A document sent as JSON: text in `content`, or any supported file in `contentBase64`. */
export const jsonUpload = z.object({
  workspaceId,
  filename: filenameField,
  content: z.string().optional().describe('The document as text'),
  contentBase64: z.string().optional().describe('The file, base64-encoded'),
  mimeType: z.string().max(255).optional(),
  tags: tags.optional(),
  tagValues: tagValues.optional(),
  sourceUrl: z.string().url().max(2048).optional(),
}).refine((b) => (b.content === undefined) !== (b.contentBase64 === undefined), {
  message: 'Send exactly one of content (text) or contentBase64',
  path: ['content'],
});

export const searchBody = z.object({
  workspaceId,
  knowledgeBaseIds: z.union([z.string().min(1), z.array(z.string().min(1)).min(1, 'knowledgeBaseIds must not be empty').max(20, 'at most 20 knowledge bases')])
    .transform((v) => (Array.isArray(v) ? v : [v])),
  query: z.string({ error: 'query must be a string' }).max(10_000, 'query must be at most 10000 characters').optional(),
  topK: z.number({ error: 'topK must be an integer' }).int('topK must be an integer').min(1, 'topK must be at least 1').max(100, 'topK must be at most 100').default(10),
  filters: z.record(z.string(), z.union([z.string(), z.number(), z.boolean()])).optional()
    .describe('Keep chunks whose document tags or chunk metadata equal every given value'),
  tagFilters: z.array(tagFilter).max(17, 'at most 17 tag filters').optional()
    .describe('Typed tag conditions, all of which must hold (one knowledge base only)'),
  searchMode: searchModeSchema.nullable().optional()
    .describe('hybrid (default): vector similarity fused with a BM25-like full-text rank; vector: similarity only (the reference default)'),
  mode: searchModeSchema.optional().describe('Earlier name of searchMode; searchMode wins when both are given'),
}).refine((b) => (b.query !== undefined && b.query.trim() !== '') || (b.tagFilters?.length ?? 0) > 0, {
  message: 'Either query or tagFilters must be provided',
  path: ['query'],
});

export const tagDefinition = z.object({
  id: z.string(),
  tagSlot: z.string().describe('tag1..tag7 (text), number1..number5, date1..date2, boolean1..boolean3'),
  displayName: z.string(),
  fieldType: tagFieldType,
  createdAt: z.string(),
  updatedAt: z.string(),
}).describe('Tag definition: names one typed slot of a knowledge base');

export const tagDefinitionBody = z.object({
  workspaceId,
  displayName: z.string().trim().min(1, 'displayName must not be empty').max(100, 'displayName must be at most 100 characters'),
  fieldType: tagFieldType.default('text'),
  tagSlot: z.enum(Object.values(TAG_SLOTS).flat() as [string, ...string[]]).optional().describe('Defaults to the first free slot of the type'),
});

export const ok = <T extends z.ZodType>(data: T) => z.object({ success: z.literal(true), data });
export const writeErrors = { ...errorResponses, 409: errorSchema };
export const uploadErrors = { ...errorResponses, 413: errorSchema, 415: errorSchema };
export { errorResponses };
