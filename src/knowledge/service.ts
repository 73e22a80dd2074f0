import { setMaxListeners } from 'node:events';
import type { Logger } from 'pino';
import type { Actor } from '../accounts/service.js';
import { recordAudit } from '../audit/audit-log.js';
import { type Database, type Queryable, uniqueViolation } from '../db/database.js';
import type { KnowledgePort, KnowledgeSearchHit } from '../engine/ports.js';
import { HttpError } from '../http/errors.js';
import { isUuid, newId } from '../ids.js';
import type { StorageGuard } from '../limits/storage.js';
import type { UsageRecorder } from '../limits/usage.js';
import type { JobChannel } from '../queue/shared.js';
import type { Embedder, EmbedderSet } from './embedder.js';
import { detectDocumentType, SUPPORTED_EXTENSIONS } from './file-types.js';
import { cleanFilename } from './filename.js';
import { type DocumentParser, type IngestOptions, IngestJobs } from './ingest-job.js';
import { fuseByRank } from './ranking.js';
import * as store from './store.js';
import {
  type ChunkingConfig, DEFAULT_CHUNKING, type PublicBase, type PublicDocument, type PublicDocumentDetail, publicBase, publicDocument,
  publicDocumentDetail, type SearchResultItem,
} from './wire-format.js';

/**
 * Knowledge bases: documents uploaded into a base are parsed, chunked and embedded by a durable ingest
 * job (the document row is the job), then searched by similarity. Every call is scoped to a workspace.
 */

/** Bytes a workspace's knowledge files take (one of the storage limit's sources). */
export const knowledgeStorageBytes = (q: Queryable, workspaceId: string): Promise<number> => store.workspaceBytes(q, workspaceId);

export interface KnowledgeOptions extends IngestOptions {
  maxFileBytes: number;
  /** USD per million tokens a hosted embedder bills (0 for the local model). */
  embeddingCostPerMillionTokens: number;
  /** HNSW candidate list size: higher finds more of the exact neighbours, slower. */
  efSearch?: number;
}

export interface KnowledgeDeps {
  db: Database;
  log: Logger;
  embedders: EmbedderSet;
  jobs: JobChannel;
  /** Parses and chunks documents off this thread (the ingest worker pool). */
  parser: DocumentParser;
  storage: StorageGuard;
  usage: UsageRecorder;
  options: KnowledgeOptions;
}

export interface UploadedFile {
  filename: string;
  /** As declared by the client; checked against the extension. */
  mimeType?: string;
  bytes: Uint8Array;
}

export interface SearchRequest {
  knowledgeBaseIds: string[];
  query: string;
  topK: number;
  filters?: Record<string, unknown>;
  mode?: 'vector' | 'hybrid';
}

const baseNotFound = (): HttpError => new HttpError(404, 'Knowledge base not found');
const documentNotFound = (): HttpError => new HttpError(404, 'Document not found');

export class KnowledgeService {
  private readonly db: Database;
  private readonly shutdown = new AbortController();
  private readonly efSearch: number;
  private readonly ingests: IngestJobs;

  constructor(private readonly deps: KnowledgeDeps) {
    this.db = deps.db;
    // Every ingest in flight (up to the worker concurrency) listens on this one signal.
    setMaxListeners(0, this.shutdown.signal);
    this.efSearch = deps.options.efSearch ?? 100;
    this.ingests = new IngestJobs({
      db: deps.db, log: deps.log, embedders: deps.embedders, jobs: deps.jobs, parser: deps.parser, options: deps.options,
      chargeEmbedding: (account, tokens, key, metadata, q) => this.chargeEmbedding(account, tokens, key, metadata, q),
    }, this.shutdown.signal);
  }

  // ----------------------------------------------------------------------------------------------
  // Knowledge bases
  // ----------------------------------------------------------------------------------------------

  async createBase(
    workspaceId: string, input: { name: string; description?: string; chunkingConfig?: Partial<ChunkingConfig> }, actor: Actor = {},
  ): Promise<PublicBase> {
    const chunking = { ...DEFAULT_CHUNKING, ...definedOnly(input.chunkingConfig ?? {}) };
    const embedder = this.deps.embedders.default;
    const dimension = await dimensionOf(embedder);
    const id = newId();
    try {
      return await this.db.tx(async (q) => {
        await store.insertBase(q, {
          id, workspaceId, name: input.name, description: input.description ?? '', embeddingModel: embedder.model, embeddingDimension: dimension, chunking,
        });
        await audit(q, workspaceId, actor, 'knowledge_base.created', id, input.name);
        return publicBase(await this.requireBase(q, workspaceId, id));
      });
    } catch (err) {
      throw nameTaken(err, input.name);
    }
  }

  async listBases(workspaceId: string): Promise<PublicBase[]> {
    return (await store.listBases(this.db, workspaceId)).map(publicBase);
  }

  async getBase(workspaceId: string, id: string): Promise<PublicBase> {
    return publicBase(await this.requireBase(this.db, workspaceId, id));
  }

  /** Renames, re-describes or re-configures chunking (applies to documents uploaded afterwards). */
  async updateBase(
    workspaceId: string, id: string, changes: { name?: string; description?: string; chunkingConfig?: ChunkingConfig }, actor: Actor = {},
  ): Promise<PublicBase> {
    try {
      return await this.db.tx(async (q) => {
        const base = await this.requireBase(q, workspaceId, id, true);
        await store.updateBase(q, id, { name: changes.name, description: changes.description, chunking: changes.chunkingConfig });
        await audit(q, workspaceId, actor, 'knowledge_base.updated', id, changes.name ?? base.name);
        return publicBase(await this.requireBase(q, workspaceId, id));
      });
    } catch (err) {
      throw nameTaken(err, changes.name ?? '');
    }
  }

  /** Deletes a base with its documents, files and chunks. */
  async deleteBase(workspaceId: string, id: string, actor: Actor = {}): Promise<void> {
    await this.db.tx(async (q) => {
      const base = await this.requireBase(q, workspaceId, id, true);
      await store.deleteBase(q, id);
      await audit(q, workspaceId, actor, 'knowledge_base.deleted', id, base.name, { docCount: base.doc_count });
    });
  }

  private async requireBase(q: Queryable, workspaceId: string, id: string, lock = false): Promise<store.BaseRow> {
    const base = isUuid(id) ? await store.findBase(q, workspaceId, id, lock) : undefined;
    if (!base) throw baseNotFound();
    return base;
  }

  // ----------------------------------------------------------------------------------------------
  // Documents
  // ----------------------------------------------------------------------------------------------

  /**
   * Stores the files and queues their ingest; answers at once with the documents `pending`. Every file
   * is checked (type, size) before anything is written, and all of them commit together or none.
   */
  async upload(
    scope: { workspaceId: string; billedAccount: string }, baseId: string, files: UploadedFile[],
    extra: { tags?: Record<string, unknown>; sourceUrl?: string | null } = {}, actor: Actor = {},
  ): Promise<PublicDocument[]> {
    if (files.length === 0) throw new HttpError(400, 'file is required: send at least one file');
    const typed = files.map((f) => {
      f = { ...f, filename: cleanFilename(f.filename) };
      if (f.bytes.byteLength > this.deps.options.maxFileBytes) {
        throw new HttpError(413, `File size exceeds ${formatMiB(this.deps.options.maxFileBytes)} limit (${formatMiB(f.bytes.byteLength)})`);
      }
      const type = detectDocumentType(f.filename, f.mimeType);
      if (!type) {
        throw new HttpError(415, `Unsupported file type for "${f.filename}". Supported types: ${SUPPORTED_EXTENSIONS.join(', ')}`);
      }
      return { ...f, ...type };
    });
    const docs = await this.db.tx(async (q) => {
      await this.requireBase(q, scope.workspaceId, baseId, true);
      const rows: store.DocumentRow[] = [];
      for (const f of typed) {
        rows.push(await store.insertDocument(q, {
          id: newId(), knowledgeBaseId: baseId, workspaceId: scope.workspaceId, filename: f.filename, mimeType: f.mimeType, fileKind: f.kind,
          content: f.bytes, tags: extra.tags ?? {}, sourceUrl: extra.sourceUrl ?? null, billedAccount: scope.billedAccount,
        }));
      }
      const added = typed.reduce((n, f) => n + f.bytes.byteLength, 0);
      await this.deps.storage.checkAfterWrite(q, scope.workspaceId, added);
      for (const row of rows) {
        await audit(q, scope.workspaceId, actor, 'knowledge_document.uploaded', row.id, row.filename, { knowledgeBaseId: baseId, fileSize: Number(row.file_size) });
      }
      return rows;
    });
    // Committed first: a lost enqueue is found again by the recovery sweep.
    for (const d of docs) await this.deps.jobs.enqueue(d.id);
    return docs.map(publicDocument);
  }

  async listDocuments(workspaceId: string, query: Omit<store.DocumentQuery, 'baseId'> & { baseId: string }) {
    await this.requireBase(this.db, workspaceId, query.baseId);
    const { rows, total } = await store.listDocuments(this.db, query);
    return {
      documents: rows.map(publicDocument),
      pagination: { total, limit: query.limit, offset: query.offset, hasMore: query.offset + rows.length < total },
    };
  }

  async getDocument(workspaceId: string, baseId: string, documentId: string): Promise<PublicDocumentDetail> {
    return publicDocumentDetail(await this.requireDocument(this.db, workspaceId, baseId, documentId));
  }

  /** Enables or disables a document (disabled ones never appear in searches), renames it or replaces its tags. */
  async updateDocument(
    workspaceId: string, baseId: string, documentId: string,
    changes: { enabled?: boolean; filename?: string; tags?: Record<string, unknown> }, actor: Actor = {},
  ): Promise<PublicDocumentDetail> {
    if (changes.filename !== undefined) changes = { ...changes, filename: cleanFilename(changes.filename) };
    return this.db.tx(async (q) => {
      await this.requireDocument(q, workspaceId, baseId, documentId);
      const row = await store.updateDocument(q, documentId, changes);
      if (!row) throw documentNotFound();
      await audit(q, workspaceId, actor, 'knowledge_document.updated', documentId, row.filename, { ...changes, knowledgeBaseId: baseId });
      return publicDocumentDetail(row);
    });
  }

  async deleteDocument(workspaceId: string, baseId: string, documentId: string, actor: Actor = {}): Promise<void> {
    await this.db.tx(async (q) => {
      const doc = await this.requireDocument(q, workspaceId, baseId, documentId);
      await store.deleteDocument(q, documentId);
      await audit(q, workspaceId, actor, 'knowledge_document.deleted', documentId, doc.filename, { knowledgeBaseId: baseId });
    });
  }

  async listChunks(workspaceId: string, baseId: string, documentId: string, page: { limit: number; offset: number }) {
    await this.requireDocument(this.db, workspaceId, baseId, documentId);
    const { rows, total } = await store.listChunks(this.db, documentId, page.limit, page.offset);
    return {
      chunks: rows.map((c) => ({
        chunkIndex: c.chunk_index, content: c.content, tokenCount: c.token_count, characterCount: c.content.length, metadata: c.metadata,
      })),
      pagination: { total, limit: page.limit, offset: page.offset, hasMore: page.offset + rows.length < total },
    };
  }

  private async requireDocument(q: Queryable, workspaceId: string, baseId: string, documentId: string): Promise<store.DocumentRow> {
    await this.requireBase(q, workspaceId, baseId);
    const doc = isUuid(documentId) ? await store.findDocument(q, workspaceId, baseId, documentId) : undefined;
    if (!doc) throw documentNotFound();
    return doc;
  }

  // ----------------------------------------------------------------------------------------------
  // Search
  // ----------------------------------------------------------------------------------------------

  /** The best `topK` chunks of the given bases for `query`, most similar first. */
  async search(scope: { workspaceId: string; billedAccount: string }, req: SearchRequest): Promise<SearchResultItem[]> {
    const ids = [...new Set(req.knowledgeBaseIds)];
    const found = await store.findBases(this.db, scope.workspaceId, ids.filter(isUuid));
    const missing = ids.filter((id) => !found.some((b) => b.id === id));
    if (missing.length > 0) {
      throw new HttpError(404, `Knowledge base${missing.length > 1 ? 's' : ''} not found: ${missing.join(', ')}`);
    }
    const models = new Set(found.map((b) => `${b.embedding_model}/${b.embedding_dimension}`));
    if (models.size > 1) {
      throw new HttpError(400, `These knowledge bases use different embedding models (${[...models].join(', ')}) and cannot be searched together`);
    }
    const base = found[0] as store.BaseRow;
    const embedder = this.deps.embedders.byModel(base.embedding_model);
    if (!embedder) {
      throw new HttpError(503, `The embedding model "${base.embedding_model}" of knowledge base ${base.id} is not configured on this server (see EMBEDDINGS_MODEL)`);
    }
    let embedded: Awaited<ReturnType<Embedder['embed']>>;
    try {
      embedded = await embedder.embed([req.query]);
    } catch (err) {
      // The embedder (a hosted provider, or the local model's worker) failed: the caller may retry.
      throw new HttpError(503, `Embedding the query failed: ${err instanceof Error ? err.message : String(err)}`, {}, { 'Retry-After': '2' });
    }
    const vector = embedded.vectors[0] as number[];
    await this.chargeEmbedding(scope.billedAccount, embedded.tokens, `knowledge-query:${newId()}`, { knowledgeBaseIds: ids });

    const search: store.ChunkSearch = {
      baseIds: ids, dimension: base.embedding_dimension, embedding: vector, limit: req.topK, filters: req.filters, efSearch: Math.max(this.efSearch, req.topK),
    };
    let hits: store.ChunkHit[];
    if (req.mode === 'hybrid') {
      // Each leg brings more candidates than asked for, so that fusion can promote a chunk both rank well.
      const wide = { ...search, limit: Math.min(200, Math.max(req.topK * 3, 30)) };
      const [vectorHits, keywordHits] = await this.db.tx(async (q) => [
        await store.nearestChunks(q, wide),
        await store.keywordChunks(q, { ...wide, query: req.query }),
      ] as const);
      hits = fuseByRank([vectorHits, keywordHits]).slice(0, req.topK);
    } else {
      hits = await this.db.tx((q) => store.nearestChunks(q, search));
    }
    return hits.map((h) => ({
      documentId: h.document_id,
      documentName: h.filename,
      knowledgeBaseId: h.knowledge_base_id,
      sourceUrl: h.source_url,
      content: h.content,
      chunkIndex: h.chunk_index,
      similarity: round(1 - Number(h.distance)),
      metadata: h.metadata,
    }));
  }

  /** The knowledge port of a run: searches the run's workspace, billed to its account. */
  portFor(workspaceId: string, billedAccount: string): KnowledgePort {
    return {
      search: async (args): Promise<KnowledgeSearchHit[]> => {
        try {
          return await this.search({ workspaceId, billedAccount }, { ...args, mode: 'vector' });
        } catch (err) {
          throw new Error(err instanceof Error ? err.message : String(err));
        }
      },
    };
  }

  private async chargeEmbedding(account: string, tokens: number, key: string, metadata: Record<string, unknown>, q: Queryable = this.db): Promise<void> {
    const price = this.deps.options.embeddingCostPerMillionTokens;
    if (tokens <= 0 || price <= 0) return;
    await this.deps.usage.record(q, { account, amountUsd: (tokens * price) / 1e6, source: 'embeddings', idempotencyKey: key, metadata: { ...metadata, tokens } });
  }

  // ----------------------------------------------------------------------------------------------
  // Ingest
  // ----------------------------------------------------------------------------------------------

  /** Starts taking ingest jobs (see ingest-job.ts), and re-dispatches what an earlier process left unfinished. */
  startWorkers(): void {
    this.ingests.start();
  }

  /** Re-enqueues unfinished ingests: all of them at embedded start-up, expired leases otherwise. */
  recover(all: boolean): Promise<number> {
    return this.ingests.recover(all);
  }

  /** One document's ingest job. */
  ingest(documentId: string): Promise<void> {
    return this.ingests.ingest(documentId);
  }

  /** Stops taking ingest jobs; those in flight stop at their next step and resume after a restart. */
  close(): void {
    this.ingests.stop();
    this.shutdown.abort();
  }
}

async function dimensionOf(embedder: Embedder): Promise<number> {
  if (embedder.dimension > 0) return embedder.dimension;
  const probe = await embedder.embed(['dimension probe']);
  return (probe.vectors[0] ?? []).length;
}

function definedOnly<T extends object>(o: T): Partial<T> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Partial<T>;
}

function nameTaken(err: unknown, name: string): unknown {
  return uniqueViolation(err) ? new HttpError(409, `A knowledge base named "${name}" already exists in this workspace`) : err;
}

const formatMiB = (bytes: number): string => `${(bytes / (1024 * 1024)).toFixed(2).replace(/\.00$/, '')}MB`;
const round = (n: number): number => Math.round(n * 1e6) / 1e6;

function audit(q: Queryable, workspaceId: string, actor: Actor, action: string, id: string, name: string, metadata: Record<string, unknown> = {}) {
  return recordAudit(q, {
    workspaceId, actorId: actor.userId, actorKeyId: actor.keyId, actorType: actor.type, action,
    resourceType: action.split('.')[0] as string, resourceId: id, resourceName: name, metadata,
  });
}
