import { setMaxListeners } from 'node:events';
import type { Logger } from 'pino';
import type { Actor } from '../accounts/service.js';
import { recordAudit } from '../audit/audit-log.js';
import { type Database, type Queryable, uniqueViolation } from '../db/database.js';
import type { KnowledgePort, KnowledgeSearchHit } from '../engine/ports.js';
import { HttpError } from '../http/errors.js';
import { isUuid, newId } from '../ids.js';
import type { StorageGuard, StorageSource } from '../limits/storage.js';
import type { UsageRecorder } from '../limits/usage.js';
import { DEFAULT_QUERY_TIMEOUT_MS, QueryTimeout } from '../limits/query-timeout.js';
import { WorkspaceGate } from '../limits/workspace-gate.js';
import type { JobChannel } from '../queue/shared.js';
import type { Embedder, EmbedderSet } from './embedder.js';
import { detectDocumentType, SUPPORTED_EXTENSIONS } from './file-types.js';
import { cleanFilename } from './filename.js';
import { type DocumentParser, type IngestOptions, IngestJobs } from './ingest-job.js';
import { KnowledgeSearch, type SearchMode, type SearchRequest } from './search-service.js';
import * as store from './store.js';
import { KnowledgeTags } from './tag-definitions.js';
import { updateDocumentTagSlots } from './tag-store.js';
import { type BilledScope, KnowledgeUsageGate, type UsageCheck } from './usage-gate.js';
import {
  type ChunkingConfig, DEFAULT_CHUNKING, type PublicBase, type PublicDocument, type PublicDocumentDetail, publicBase, publicDocument,
  publicDocumentDetail, type SearchResultItem,
} from './wire-format.js';

/**
 * Knowledge bases: documents uploaded into a base are parsed, chunked and embedded by a durable ingest
 * job (the document row is the job), then searched by similarity. Every call is scoped to a workspace.
 */

/** Bytes a workspace's knowledge documents store: files, rows and chunks (one of the storage limit's sources; stored-bytes.ts). */
export const knowledgeStorageBytes: StorageSource = { sql: store.WORKSPACE_BYTES_SQL };

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
  /** Shared with the other areas' scans: how many of a workspace's searches run at once (default: a gate of its own). */
  gate?: WorkspaceGate;
  /** How long a search may hold the database (default 10 s). */
  queryTimeout?: QueryTimeout;
  /** The usage cap's 402 for uploads and searches with a query (LimitsService.refuseOverUsage); absent: no cap. */
  usageCheck?: UsageCheck;
}

export interface UploadedFile {
  filename: string;
  /** As declared by the client; checked against the extension. */
  mimeType?: string;
  bytes: Uint8Array;
}


const baseNotFound = (): HttpError => new HttpError(404, 'Knowledge base not found');
const documentNotFound = (): HttpError => new HttpError(404, 'Document not found');

export class KnowledgeService {
  private readonly db: Database;
  private readonly shutdown = new AbortController();
  private readonly ingests: IngestJobs;
  /** Typed tag definitions of the bases and the checks of tag values and filters. */
  readonly tags: KnowledgeTags;
  private readonly searcher: KnowledgeSearch;
  /** The usage cap of uploads and searches with a query (usage-gate.ts). */
  private readonly usageGate: KnowledgeUsageGate;

  constructor(private readonly deps: KnowledgeDeps) {
    this.db = deps.db;
    this.usageGate = new KnowledgeUsageGate(deps.usageCheck);
    // Every ingest in flight (up to the worker concurrency) listens on this one signal.
    setMaxListeners(0, this.shutdown.signal);
    this.ingests = new IngestJobs({
      db: deps.db, log: deps.log, embedders: deps.embedders, jobs: deps.jobs, parser: deps.parser, options: deps.options, storage: deps.storage,
      chargeEmbedding: (account, tokens, key, metadata, q) => this.chargeEmbedding(account, tokens, key, metadata, q),
    }, this.shutdown.signal);
    this.tags = new KnowledgeTags(deps.db, (q, workspaceId, baseId) => this.requireBase(q, workspaceId, baseId), deps.storage);
    this.searcher = new KnowledgeSearch({
      db: deps.db, log: deps.log, embedders: deps.embedders, tags: this.tags, efSearch: deps.options.efSearch ?? 100, gate: deps.gate ?? new WorkspaceGate(), queryTimeout: deps.queryTimeout ?? new QueryTimeout(DEFAULT_QUERY_TIMEOUT_MS),
      usageGate: this.usageGate,
      charge: (account, tokens, key, metadata) => this.chargeEmbedding(account, tokens, key, metadata),
    });
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
        // A base holds nothing countable yet, but a workspace over its storage takes no new ones.
        await this.deps.storage.checkRoom(q, workspaceId, 0);
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
    this.ingests.abandon({ baseId: id });
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
   * is checked (type, size) before anything is written, and all of them commit together or none. In the
   * reference's order: size (413) and type (415), then the base (404), then the usage cap (402).
   */
  async upload(
    scope: BilledScope, baseId: string, files: UploadedFile[],
    extra: { tags?: Record<string, unknown>; tagValues?: Record<string, unknown>; sourceUrl?: string | null } = {}, actor: Actor = {},
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
      await this.usageGate.check(q, scope);
      const tagSlots = extra.tagValues ? withoutNulls(await this.tags.slotValues(q, baseId, extra.tagValues)) : {};
      const rows: store.DocumentRow[] = [];
      for (const f of typed) {
        rows.push(await store.insertDocument(q, {
          id: newId(), knowledgeBaseId: baseId, workspaceId: scope.workspaceId, filename: f.filename, mimeType: f.mimeType, fileKind: f.kind,
          content: f.bytes, tags: extra.tags ?? {}, tagSlots, sourceUrl: extra.sourceUrl ?? null, billedAccount: scope.billedAccount,
        }));
      }
      // Files, names and tags alike (stored-bytes.ts): documents of zero bytes with large tags count too.
      const added = rows.reduce((n, row) => n + Number(row.stored_bytes), 0);
      await this.deps.storage.checkAfterWrite(q, scope.workspaceId, added);
      for (const row of rows) {
        await audit(q, scope.workspaceId, actor, 'knowledge_document.uploaded', row.id, row.filename, { knowledgeBaseId: baseId, fileSize: Number(row.file_size) });
      }
      return rows;
    });
    // Committed first: a lost enqueue is found again by the recovery sweep.
    for (const d of docs) await this.deps.jobs.enqueue(d.id);
    const defs = await this.tags.definitions(this.db, baseId);
    return docs.map((d) => publicDocument(d, defs));
  }

  async listDocuments(workspaceId: string, query: Omit<store.DocumentQuery, 'baseId'> & { baseId: string }) {
    await this.requireBase(this.db, workspaceId, query.baseId);
    const { rows, total } = await store.listDocuments(this.db, query);
    const defs = await this.tags.definitions(this.db, query.baseId);
    return {
      documents: rows.map((d) => publicDocument(d, defs)),
      pagination: { total, limit: query.limit, offset: query.offset, hasMore: query.offset + rows.length < total },
    };
  }

  async getDocument(workspaceId: string, baseId: string, documentId: string): Promise<PublicDocumentDetail> {
    const doc = await this.requireDocument(this.db, workspaceId, baseId, documentId);
    return publicDocumentDetail(doc, await this.tags.definitions(this.db, baseId));
  }

  /** Enables or disables a document (disabled ones never appear in searches), renames it or replaces its tags. */
  async updateDocument(
    workspaceId: string, baseId: string, documentId: string,
    changes: { enabled?: boolean; filename?: string; tags?: Record<string, unknown>; tagValues?: Record<string, unknown> }, actor: Actor = {},
  ): Promise<PublicDocumentDetail> {
    if (changes.filename !== undefined) changes = { ...changes, filename: cleanFilename(changes.filename) };
    return this.db.tx(async (q) => {
      const before = await this.requireDocument(q, workspaceId, baseId, documentId);
      const { tagValues, ...plain } = changes;
      if (tagValues) await updateDocumentTagSlots(q, documentId, await this.tags.slotValues(q, baseId, tagValues));
      const row = await store.updateDocument(q, documentId, plain);
      if (!row) throw documentNotFound();
      // A new name or tags may store more (or free some); enabling or disabling stores nothing.
      if (changes.filename !== undefined || changes.tags !== undefined || tagValues !== undefined) {
        // A change that does not shrink the document is refused while the workspace is over its limit.
        const added = Number(row.stored_bytes) - Number(before.stored_bytes);
        if (added >= 0) await this.deps.storage.checkRoom(q, workspaceId, 0);
      }
      await audit(q, workspaceId, actor, 'knowledge_document.updated', documentId, row.filename, { ...changes, knowledgeBaseId: baseId });
      return publicDocumentDetail(row, await this.tags.definitions(q, baseId));
    });
  }

  async deleteDocument(workspaceId: string, baseId: string, documentId: string, actor: Actor = {}): Promise<void> {
    await this.db.tx(async (q) => {
      const doc = await this.requireDocument(q, workspaceId, baseId, documentId);
      await store.deleteDocument(q, documentId);
      await audit(q, workspaceId, actor, 'knowledge_document.deleted', documentId, doc.filename, { knowledgeBaseId: baseId });
    });
    // Committed first: a parse still running for the document is stopped and its worker slot freed.
    this.ingests.abandon({ documentId });
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

  /** The best `topK` chunks of the given bases for `query` (or the tag filters alone), best first. */
  search(scope: BilledScope, req: SearchRequest): Promise<{ results: SearchResultItem[]; mode: SearchMode }> {
    return this.searcher.search(scope, req);
  }

  /** The knowledge port of a run: searches the run's workspace, billed to its account. */
  portFor(workspaceId: string, billedAccount: string): KnowledgePort {
    return {
      search: async (args): Promise<KnowledgeSearchHit[]> => {
        try {
          return (await this.search({ workspaceId, billedAccount }, args)).results;
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

function withoutNulls<T>(o: Record<string, T | null>): Record<string, T> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== null)) as Record<string, T>;
}

function audit(q: Queryable, workspaceId: string, actor: Actor, action: string, id: string, name: string, metadata: Record<string, unknown> = {}) {
  return recordAudit(q, {
    workspaceId, actorId: actor.userId, actorKeyId: actor.keyId, actorType: actor.type, action,
    resourceType: action.split('.')[0] as string, resourceId: id, resourceName: name, metadata,
  });
}
