// Search over knowledge bases: the query embedded by the bases' model, then the vector leg alone
// (`vector`, the reference's behaviour) or fused with the BM25-like full-text leg (`hybrid`, Weft's
// default: it wins on bench/knowledge-quality.ts); or, without a query, the chunks that pass the tag filters.
import type { Logger } from 'pino';
import type { Database } from '../db/database.js';
import { holdsUnstorableString } from '../db/storable-text.js';
import { HttpError } from '../http/errors.js';
import { isUuid, newTimeOrderedToken } from '../ids.js';
import type { Embedder, EmbedderSet } from './embedder.js';
import { fuseScored, rerankPassages, similarityFromDistance, vectorDistanceCutoff, type WeightedTerm, withinDistance } from './ranking.js';
import * as store from './store.js';
import type { KnowledgeTags, TagFilterInput } from './tag-definitions.js';
import { listTagDefinitions } from './tag-store.js';
import { keywordChunks } from './text-search-store.js';
import type { BilledScope, KnowledgeUsageGate } from './usage-gate.js';
import { namedTagValues, type SearchResultItem } from './wire-format.js';
import type { QueryTimeout } from '../limits/query-timeout.js';
import type { WorkspaceGate } from '../limits/workspace-gate.js';

export type SearchMode = 'vector' | 'hybrid';
export const DEFAULT_SEARCH_MODE: SearchMode = 'hybrid';

export interface SearchRequest {
  knowledgeBaseIds: string[];
  /** Absent or blank: a tag-only search (needs tagFilters). */
  query?: string;
  topK: number;
  filters?: Record<string, unknown>;
  tagFilters?: TagFilterInput[];
  mode?: SearchMode;
}

export interface SearchDeps {
  db: Database;
  log: Logger;
  embedders: EmbedderSet;
  tags: KnowledgeTags;
  efSearch: number;
  charge: (account: string, tokens: number, key: string, metadata: Record<string, unknown>) => Promise<void>;
  /** How many of a workspace's searches run at once (the rest wait their turn). */
  gate: WorkspaceGate;
  /** How long a search's statements may hold the database (503 `QUERY_TIMEOUT` past it). */
  queryTimeout: QueryTimeout;
  /** The usage cap (402) of a search with a query. */
  usageGate: KnowledgeUsageGate;
}

/** Candidates each leg of a hybrid search brings: more than asked for, so fusion can promote a chunk both legs rank well. */
const hybridWidth = (topK: number): number => Math.min(200, Math.max(topK * 3, 30));

export class KnowledgeSearch {
  constructor(private readonly deps: SearchDeps) {}

  /** The best `topK` chunks of the given bases, best first, and the mode that ranked them. */
  async search(scope: BilledScope, req: SearchRequest): Promise<{ results: SearchResultItem[]; mode: SearchMode }> {
    // A request body passed the JSON parser's check, but a workflow's knowledge block searches with text other
    // blocks produced: a NUL or a lone surrogate would reach PostgreSQL, which refuses it in text and jsonb.
    if (holdsUnstorableString([req.query ?? '', req.filters ?? {}, req.tagFilters ?? []])) {
      throw new HttpError(400, 'The search holds a NUL character (\\u0000) or an unpaired surrogate, which cannot be searched for');
    }
    // The reference's order (sim-api 10.4): the usage cap (402) before the bases are looked up (404). Only a
    // search with a query is billed (its embedding); a tag-only search is never refused for usage.
    if (req.query?.trim()) await this.deps.usageGate.check(this.deps.db, scope);
    return this.deps.gate.run(scope.workspaceId, () => this.searchNow(scope, req));
  }

  private async searchNow(scope: BilledScope, req: SearchRequest): Promise<{ results: SearchResultItem[]; mode: SearchMode }> {
    const { db } = this.deps;
    const ids = [...new Set(req.knowledgeBaseIds)];
    const found = await store.findBases(db, scope.workspaceId, ids.filter(isUuid));
    const missing = ids.filter((id) => !found.some((b) => b.id === id));
    if (missing.length > 0) {
      throw new HttpError(404, `Knowledge base${missing.length > 1 ? 's' : ''} not found: ${missing.join(', ')}`);
    }
    const query = req.query?.trim() ? req.query : undefined;
    const tagFilters = req.tagFilters ?? [];
    if (!query && tagFilters.length === 0) throw new HttpError(400, 'Either query or tagFilters must be provided');
    if (tagFilters.length > 0 && ids.length > 1) throw new HttpError(400, 'Tag filters are only supported when searching a single knowledge base');
    const base = found[0] as store.BaseRow;
    const resolved = tagFilters.length > 0 ? await this.deps.tags.resolveFilters(base.id, tagFilters) : undefined;
    const mode = req.mode ?? DEFAULT_SEARCH_MODE;

    if (!query) {
      // Tag-only: nothing to rank by, nothing to embed or bill; every hit matches fully.
      const hits = await this.deps.queryTimeout.run(db, 'search', (q) => store.filteredChunks(q, { baseIds: ids, dimension: base.embedding_dimension, limit: req.topK, filters: req.filters, tagFilters: resolved }));
      return { results: await this.shape(hits, () => 1), mode };
    }

    const models = new Set(found.map((b) => `${b.embedding_model}/${b.embedding_dimension}`));
    if (models.size > 1) {
      throw new HttpError(400, `These knowledge bases use different embedding models (${[...models].join(', ')}) and cannot be searched together`);
    }
    const embedder = this.deps.embedders.byModel(base.embedding_model);
    if (!embedder) {
      throw new HttpError(503, `The embedding model "${base.embedding_model}" of knowledge base ${base.id} is not configured on this server (see EMBEDDINGS_MODEL)`);
    }
    let embedded: Awaited<ReturnType<Embedder['embed']>>;
    try {
      embedded = await embedder.embed([query]);
    } catch (err) {
      // The embedder (a hosted provider, or the local model's worker) failed: the caller may retry.
      throw new HttpError(503, `Embedding the query failed: ${err instanceof Error ? err.message : String(err)}`, {}, { 'Retry-After': '2' });
    }
    await this.deps.charge(scope.billedAccount, embedded.tokens, `knowledge-query:${newTimeOrderedToken()}`, { knowledgeBaseIds: ids });

    // Vector hits only within the reference's distance cutoff (sim-api 10.4): below 1.0 over up to 3 bases, 0.8 over more.
    const cutoff = vectorDistanceCutoff(ids.length);
    const search: store.ChunkSearch = {
      baseIds: ids, dimension: base.embedding_dimension, embedding: embedded.vectors[0] as number[], limit: req.topK,
      filters: req.filters, tagFilters: resolved, efSearch: Math.max(this.deps.efSearch, req.topK),
    };
    let hits: store.ChunkHit[];
    if (mode === 'hybrid') {
      const wide = { ...search, limit: hybridWidth(req.topK), efSearch: Math.max(this.deps.efSearch, hybridWidth(req.topK)) };
      // The cutoff applies to the vector leg here too, as in the reference's hybrid search; the full-text leg's
      // hits are kept whatever their distance (they carry it for fusion), so a chunk that names the question's
      // identifier or codename is still found when its vector is far. A vector-only candidate past the cutoff
      // ranked low anyway, with the lowest vector scores and no text score (docs/architecture.md, Knowledge
      // ingest: fusion mixes the two legs half and half, then the passage rerank), so mostly the tail shortens.
      const vectorHits = withinDistance(await this.nearest(wide), cutoff);
      let keyword: { hits: store.ChunkHit[]; terms: WeightedTerm[] } = { hits: [], terms: [] };
      try {
        keyword = await this.deps.queryTimeout.run(db, 'search', (q) => keywordChunks(q, { ...wide, query }));
      } catch (err) {
        // As the reference does: a failing full-text leg leaves the vector ranking alone.
        this.deps.log.warn({ err }, 'full-text leg of a hybrid search failed; answering with vector ranking only');
      }
      // Fusion ranks the candidates; the passage rerank then brings forward, among them, the chunks where
      // the question's words occur together (docs/architecture.md, Knowledge ingest).
      hits = rerankPassages(fuseScored(vectorHits, keyword.hits), keyword.terms).slice(0, req.topK);
    } else {
      hits = withinDistance(await this.nearest(search), cutoff);
    }
    return { results: await this.shape(hits, (h) => similarityFromDistance(Number(h.distance))), mode };
  }

  /** The vector leg: in a transaction of its own, which scopes its index settings and bounds its time. */
  private nearest(search: store.ChunkSearch): Promise<store.ChunkHit[]> {
    const { db, queryTimeout } = this.deps;
    return queryTimeout.answering('search', queryTimeout.tx(db, (q) => store.nearestChunks(q, search)));
  }

  /**
   * The wire shape of hits: the chunk's metadata, with each named tag of its document beside it. A tag wins
   * over a metadata key of the same name (a tag named "page" or "headings"): the reference's `metadata` maps
   * tag display names to values, so a tag the caller defined is never hidden by where the chunk came from.
   */
  private async shape(hits: store.ChunkHit[], similarity: (h: store.ChunkHit) => number): Promise<SearchResultItem[]> {
    const tagged = hits.filter((h) => h.tag_slots && Object.keys(h.tag_slots).length > 0);
    const defsByBase = new Map<string, Awaited<ReturnType<typeof listTagDefinitions>>>();
    for (const baseId of new Set(tagged.map((h) => h.knowledge_base_id))) defsByBase.set(baseId, await listTagDefinitions(this.deps.db, baseId));
    return hits.map((h) => ({
      documentId: h.document_id,
      documentName: h.filename,
      knowledgeBaseId: h.knowledge_base_id,
      sourceUrl: h.source_url,
      content: h.content,
      chunkIndex: h.chunk_index,
      similarity: round(similarity(h)),
      metadata: { ...h.metadata, ...namedTagValues(defsByBase.get(h.knowledge_base_id) ?? [], h.tag_slots) },
    }));
  }
}

const round = (n: number): number => Math.round(n * 1e6) / 1e6;
