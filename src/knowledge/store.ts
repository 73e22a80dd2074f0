import type { Queryable } from '../db/database.js';
import { blobFromText, blobParam } from '../db/blob.js';
import { substringRegex } from '../db/substring-match.js';
import { chunksStoredBytes } from './stored-bytes.js';
import { type TagFilterSql, tagFilterSql } from './tag-filter-sql.js';

/** SQL of the knowledge area. Every lookup is scoped by workspace; documents also by their base. */

export interface BaseRow {
  id: string;
  workspace_id: string;
  name: string;
  description: string;
  embedding_model: string;
  embedding_dimension: number;
  chunk_max_size: number;
  chunk_min_size: number;
  chunk_overlap: number;
  created_at: Date;
  updated_at: Date;
  doc_count: number;
  token_count: number;
}

export type ProcessingStatus = 'pending' | 'processing' | 'completed' | 'failed';

export interface DocumentRow {
  id: string;
  knowledge_base_id: string;
  workspace_id: string;
  filename: string;
  mime_type: string;
  file_kind: string;
  file_size: number;
  processing_status: ProcessingStatus;
  processing_error: string | null;
  processing_started_at: Date | null;
  processing_completed_at: Date | null;
  attempts: number;
  chunk_count: number;
  token_count: number;
  character_count: number;
  enabled: boolean;
  tags: Record<string, unknown>;
  /** Typed tags: slot (tag1, number2, ...) -> value. */
  tag_slots: Record<string, unknown>;
  source_url: string | null;
  billed_account: string | null;
  /** What the document counts toward the workspace's storage (stored-bytes.ts); bigint, read as a string. */
  stored_bytes: number | string;
  created_at: Date;
  updated_at: Date;
}

export interface ChunkRow {
  chunk_index: number;
  content: string;
  token_count: number;
  metadata: Record<string, unknown>;
}

const NOW_MS = "date_trunc('milliseconds', clock_timestamp())";
const BASE_COLUMNS = `b.id, b.workspace_id, b.name, b.description, b.embedding_model, b.embedding_dimension, b.chunk_max_size,
  b.chunk_min_size, b.chunk_overlap, b.created_at, b.updated_at,
  (SELECT count(*)::int FROM knowledge_documents d WHERE d.knowledge_base_id = b.id) AS doc_count,
  (SELECT COALESCE(sum(d.token_count), 0)::int FROM knowledge_documents d WHERE d.knowledge_base_id = b.id) AS token_count`;
const DOCUMENT_COLUMNS = `id, knowledge_base_id, workspace_id, filename, mime_type, file_kind, file_size, processing_status,
  processing_error, processing_started_at, processing_completed_at, attempts, chunk_count, token_count, character_count,
  enabled, tags, tag_slots, source_url, billed_account, stored_bytes, created_at, updated_at`;

// ------------------------------------------------------------------------------------------------
// Knowledge bases
// ------------------------------------------------------------------------------------------------

export interface NewBase {
  id: string;
  workspaceId: string;
  name: string;
  description: string;
  embeddingModel: string;
  embeddingDimension: number;
  chunking: { maxSize: number; minSize: number; overlap: number };
}

export async function insertBase(q: Queryable, b: NewBase): Promise<void> {
  await q.query(
    `INSERT INTO knowledge_bases (id, workspace_id, name, description, embedding_model, embedding_dimension, chunk_max_size, chunk_min_size, chunk_overlap)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
    [b.id, b.workspaceId, b.name, b.description, b.embeddingModel, b.embeddingDimension, b.chunking.maxSize, b.chunking.minSize, b.chunking.overlap],
  );
}

export async function findBase(q: Queryable, workspaceId: string, id: string, lock = false): Promise<BaseRow | undefined> {
  const rows = await q.query<BaseRow>(
    `SELECT ${BASE_COLUMNS} FROM knowledge_bases b WHERE b.id = $1 AND b.workspace_id = $2${lock ? ' FOR UPDATE OF b' : ''}`,
    [id, workspaceId],
  );
  return rows[0];
}

export async function findBases(q: Queryable, workspaceId: string, ids: string[]): Promise<BaseRow[]> {
  return q.query<BaseRow>(`SELECT ${BASE_COLUMNS} FROM knowledge_bases b WHERE b.id = ANY($1::uuid[]) AND b.workspace_id = $2`, [ids, workspaceId]);
}

export async function listBases(q: Queryable, workspaceId: string): Promise<BaseRow[]> {
  return q.query<BaseRow>(`SELECT ${BASE_COLUMNS} FROM knowledge_bases b WHERE b.workspace_id = $1 ORDER BY b.created_at, b.id`, [workspaceId]);
}

export interface BaseChanges {
  name?: string;
  description?: string;
  chunking?: { maxSize: number; minSize: number; overlap: number };
}

export async function updateBase(q: Queryable, id: string, c: BaseChanges): Promise<void> {
  await q.query(
    `UPDATE knowledge_bases SET name = COALESCE($2, name), description = COALESCE($3, description),
       chunk_max_size = COALESCE($4, chunk_max_size), chunk_min_size = COALESCE($5, chunk_min_size),
       chunk_overlap = COALESCE($6, chunk_overlap), updated_at = ${NOW_MS}
     WHERE id = $1`,
    [id, c.name ?? null, c.description ?? null, c.chunking?.maxSize ?? null, c.chunking?.minSize ?? null, c.chunking?.overlap ?? null],
  );
}

export async function deleteBase(q: Queryable, id: string): Promise<void> {
  await q.query('DELETE FROM knowledge_bases WHERE id = $1', [id]);
}

/**
 * Bytes a workspace's knowledge documents store (`$1`: the workspace id), its share of the storage limit:
 * files, document rows and chunks, one maintained figure per document (stored-bytes.ts).
 */
export const WORKSPACE_BYTES_SQL = 'SELECT COALESCE(sum(stored_bytes), 0) FROM knowledge_documents WHERE workspace_id = $1';

// ------------------------------------------------------------------------------------------------
// Documents
// ------------------------------------------------------------------------------------------------

export interface NewDocument {
  id: string;
  knowledgeBaseId: string;
  workspaceId: string;
  filename: string;
  mimeType: string;
  fileKind: string;
  content: Uint8Array;
  tags: Record<string, unknown>;
  tagSlots?: Record<string, unknown>;
  sourceUrl: string | null;
  billedAccount: string;
}

export async function insertDocument(q: Queryable, d: NewDocument): Promise<DocumentRow> {
  const rows = await q.query<DocumentRow>(
    `INSERT INTO knowledge_documents (id, knowledge_base_id, workspace_id, filename, mime_type, file_kind, file_size, tags, source_url, billed_account, tag_slots)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8::jsonb, $9, $10, $11::jsonb) RETURNING ${DOCUMENT_COLUMNS}`,
    [d.id, d.knowledgeBaseId, d.workspaceId, d.filename, d.mimeType, d.fileKind, d.content.byteLength, JSON.stringify(d.tags), d.sourceUrl, d.billedAccount,
      JSON.stringify(d.tagSlots ?? {})],
  );
  await q.query("INSERT INTO knowledge_files (document_id, content) VALUES ($1, decode($2, 'base64'))", [d.id, blobParam(d.content)]);
  return rows[0] as DocumentRow;
}

export async function findDocument(q: Queryable, workspaceId: string, baseId: string, id: string): Promise<DocumentRow | undefined> {
  const rows = await q.query<DocumentRow>(
    `SELECT ${DOCUMENT_COLUMNS} FROM knowledge_documents WHERE id = $1 AND knowledge_base_id = $2 AND workspace_id = $3`,
    [id, baseId, workspaceId],
  );
  return rows[0];
}

export const DOCUMENT_SORT_COLUMNS = {
  filename: 'filename',
  fileSize: 'file_size',
  tokenCount: 'token_count',
  chunkCount: 'chunk_count',
  uploadedAt: 'created_at',
  processingStatus: 'processing_status',
  enabled: 'enabled',
} as const;

export interface DocumentQuery {
  baseId: string;
  limit: number;
  offset: number;
  search?: string;
  enabled?: boolean;
  sortBy: keyof typeof DOCUMENT_SORT_COLUMNS;
  sortOrder: 'asc' | 'desc';
}

export async function listDocuments(q: Queryable, f: DocumentQuery): Promise<{ rows: DocumentRow[]; total: number }> {
  const where = ['knowledge_base_id = $1'];
  const params: unknown[] = [f.baseId];
  if (f.search) {
    params.push(substringRegex(f.search, 'contains'));
    where.push(`filename ~* $${params.length}`);
  }
  if (f.enabled !== undefined) {
    params.push(f.enabled);
    where.push(`enabled = $${params.length}`);
  }
  const order = `${DOCUMENT_SORT_COLUMNS[f.sortBy]} ${f.sortOrder === 'asc' ? 'ASC' : 'DESC'}, id ${f.sortOrder === 'asc' ? 'ASC' : 'DESC'}`;
  const total = await q.query<{ n: number }>(`SELECT count(*)::int AS n FROM knowledge_documents WHERE ${where.join(' AND ')}`, params);
  const rows = await q.query<DocumentRow>(
    `SELECT ${DOCUMENT_COLUMNS} FROM knowledge_documents WHERE ${where.join(' AND ')} ORDER BY ${order}
      LIMIT $${params.length + 1} OFFSET $${params.length + 2}`,
    [...params, f.limit, f.offset],
  );
  return { rows, total: total[0]?.n ?? 0 };
}

export async function updateDocument(
  q: Queryable, id: string, c: { enabled?: boolean; filename?: string; tags?: Record<string, unknown> },
): Promise<DocumentRow | undefined> {
  const rows = await q.query<DocumentRow>(
    `UPDATE knowledge_documents SET enabled = COALESCE($2, enabled), filename = COALESCE($3, filename),
       tags = COALESCE($4::jsonb, tags), updated_at = ${NOW_MS}
     WHERE id = $1 RETURNING ${DOCUMENT_COLUMNS}`,
    [id, c.enabled ?? null, c.filename ?? null, c.tags === undefined ? null : JSON.stringify(c.tags)],
  );
  if (c.enabled !== undefined) await q.query('UPDATE knowledge_chunks SET enabled = $2 WHERE document_id = $1 AND enabled <> $2', [id, c.enabled]);
  return rows[0];
}

export async function deleteDocument(q: Queryable, id: string): Promise<void> {
  await q.query('DELETE FROM knowledge_documents WHERE id = $1', [id]);
}

export async function listChunks(q: Queryable, documentId: string, limit: number, offset: number): Promise<{ rows: ChunkRow[]; total: number }> {
  const total = await q.query<{ n: number }>('SELECT count(*)::int AS n FROM knowledge_chunks WHERE document_id = $1', [documentId]);
  const rows = await q.query<ChunkRow>(
    `SELECT chunk_index, content, token_count, metadata FROM knowledge_chunks WHERE document_id = $1
      ORDER BY chunk_index LIMIT $2 OFFSET $3`,
    [documentId, limit, offset],
  );
  return { rows, total: total[0]?.n ?? 0 };
}

// ------------------------------------------------------------------------------------------------
// Ingest jobs: the document row is the job; `attempts` fences a worker that lost its lease.
// ------------------------------------------------------------------------------------------------

export interface LeasedDocument extends DocumentRow {
  embedding_model: string;
  embedding_dimension: number;
  chunk_max_size: number;
  chunk_min_size: number;
  chunk_overlap: number;
}

/** Takes the ingest job of a pending document, or of one whose worker's lease expired. */
export async function leaseDocument(q: Queryable, id: string, leaseMs: number): Promise<LeasedDocument | undefined> {
  const rows = await q.query<LeasedDocument>(
    `WITH leased AS (
       UPDATE knowledge_documents SET processing_status = 'processing', attempts = attempts + 1,
              processing_started_at = COALESCE(processing_started_at, ${NOW_MS}),
              lease_until = clock_timestamp() + ($2::int * interval '1 millisecond'), updated_at = ${NOW_MS}
        WHERE id = $1 AND (processing_status = 'pending'
           OR (processing_status = 'processing' AND (lease_until IS NULL OR lease_until < clock_timestamp())))
        RETURNING ${DOCUMENT_COLUMNS})
     SELECT l.*, b.embedding_model, b.embedding_dimension, b.chunk_max_size, b.chunk_min_size, b.chunk_overlap
       FROM leased l JOIN knowledge_bases b ON b.id = l.knowledge_base_id`,
    [id, leaseMs],
  );
  return rows[0];
}

/** False when the ingest no longer holds its document: deleted (with its base or workspace), or taken over. */
export async function renewDocumentLease(q: Queryable, id: string, attempt: number, leaseMs: number): Promise<boolean> {
  const rows = await q.query(
    `UPDATE knowledge_documents SET lease_until = clock_timestamp() + ($3::int * interval '1 millisecond')
      WHERE id = $1 AND attempts = $2 AND processing_status = 'processing' RETURNING id`,
    [id, attempt, leaseMs],
  );
  return rows.length > 0;
}

export async function readFile(q: Queryable, documentId: string): Promise<Uint8Array | undefined> {
  const rows = await q.query<{ content: string }>("SELECT encode(content, 'base64') AS content FROM knowledge_files WHERE document_id = $1", [documentId]);
  const content = rows[0]?.content;
  return content === undefined ? undefined : blobFromText(content);
}

export interface IngestedChunk {
  index: number;
  content: string;
  tokenCount: number;
  metadata: Record<string, unknown>;
  embedding: number[];
  /** Where the chunk stands (document title, heading path): indexed for full text beside the content. */
  context?: string;
}

/**
 * Ends an ingest that still holds its lease (`attempt`): writes every chunk and the document's counts,
 * the chunks' storage estimate (`chunk_bytes`, stored-bytes.ts) among them. False when the lease was lost
 * (another worker took the job over) or the document was deleted.
 */
export async function completeDocument(
  q: Queryable, doc: { id: string; baseId: string; attempt: number; dimension: number },
  chunks: IngestedChunk[], totals: { tokens: number; characters: number },
): Promise<boolean> {
  const done = await q.query<{ enabled: boolean }>(
    `UPDATE knowledge_documents SET processing_status = 'completed', processing_error = NULL, lease_until = NULL,
            processing_completed_at = ${NOW_MS}, updated_at = ${NOW_MS},
            chunk_count = $3, token_count = $4, character_count = $5, chunk_bytes = $6
      WHERE id = $1 AND attempts = $2 AND processing_status = 'processing' RETURNING enabled`,
    [doc.id, doc.attempt, chunks.length, totals.tokens, totals.characters, chunksStoredBytes(chunks, doc.dimension)],
  );
  const row = done[0];
  if (!row) return false;
  await q.query('DELETE FROM knowledge_chunks WHERE document_id = $1', [doc.id]);
  // One statement per batch: the rows travel as parallel arrays.
  for (let i = 0; i < chunks.length; i += 500) {
    const batch = chunks.slice(i, i + 500);
    await q.query(
      `INSERT INTO knowledge_chunks (document_id, chunk_index, knowledge_base_id, enabled, content, token_count, metadata, dimension, embedding, search_text)
       SELECT $1, u.idx, $2, $3, u.content, u.tokens, u.meta::jsonb, $4, u.vec::vector,
              setweight(to_tsvector('english', u.context), 'C') || to_tsvector('english', u.content)
         FROM unnest($5::int[], $6::text[], $7::int[], $8::text[], $9::text[], $10::text[]) AS u(idx, content, tokens, meta, vec, context)`,
      [
        doc.id, doc.baseId, row.enabled, doc.dimension,
        batch.map((c) => c.index), batch.map((c) => c.content), batch.map((c) => c.tokenCount),
        batch.map((c) => JSON.stringify(c.metadata)), batch.map((c) => vectorLiteral(c.embedding)), batch.map((c) => c.context ?? ''),
      ],
    );
  }
  return true;
}

/**
 * Counts (and commits, the caller passing no transaction) a parse about to start, while the ingest holds its
 * lease; answers how many parses of the document have started without reporting back, this one included.
 * Undefined when the lease was lost.
 */
export async function beginParseAttempt(q: Queryable, id: string, attempt: number): Promise<number | undefined> {
  const rows = await q.query<{ crashed_attempts: number }>(
    `UPDATE knowledge_documents SET crashed_attempts = crashed_attempts + 1
      WHERE id = $1 AND attempts = $2 AND processing_status = 'processing' RETURNING crashed_attempts`,
    [id, attempt],
  );
  return rows[0]?.crashed_attempts;
}

/** The parse counted by `beginParseAttempt` reported back (with a result or an error): it did not crash. */
export async function endParseAttempt(q: Queryable, id: string): Promise<void> {
  await q.query('UPDATE knowledge_documents SET crashed_attempts = GREATEST(crashed_attempts - 1, 0) WHERE id = $1', [id]);
}

/** Marks an ingest failed (if it still holds its lease) with a reason for the caller. */
export async function failDocument(q: Queryable, id: string, attempt: number, reason: string): Promise<void> {
  await q.query(
    `UPDATE knowledge_documents SET processing_status = 'failed', processing_error = $3, lease_until = NULL,
            processing_completed_at = ${NOW_MS}, updated_at = ${NOW_MS}
      WHERE id = $1 AND attempts = $2 AND processing_status = 'processing'`,
    [id, attempt, reason],
  );
}

/** Documents whose ingest is unfinished: pending, or processing with an expired lease (all of them when `all`). */
export async function unfinishedDocuments(q: Queryable, all: boolean, limit: number): Promise<{ id: string; attempts: number }[]> {
  return q.query<{ id: string; attempts: number }>(
    `SELECT id, attempts FROM knowledge_documents
      WHERE processing_status = 'pending'
         OR (processing_status = 'processing' AND ($1 OR lease_until IS NULL OR lease_until < clock_timestamp()))
      ORDER BY created_at LIMIT $2`,
    [all, limit],
  );
}

/** Embedded start-up: this process holds the data directory, so every lease left behind is a dead one. */
export async function releaseDocumentLeases(q: Queryable): Promise<void> {
  await q.query(`UPDATE knowledge_documents SET lease_until = NULL WHERE processing_status = 'processing'`);
}

// ------------------------------------------------------------------------------------------------
// Search
// ------------------------------------------------------------------------------------------------

export interface ChunkHit {
  document_id: string;
  chunk_index: number;
  knowledge_base_id: string;
  filename: string;
  source_url: string | null;
  content: string;
  metadata: Record<string, unknown>;
  /** The document's tag slot values (typed tags). */
  tag_slots?: Record<string, unknown>;
  distance: number;
  /** The full-text leg's score (hybrid search only). */
  text_score?: number;
}

export const vectorLiteral = (v: readonly number[]): string => `[${v.join(',')}]`;

export interface ChunkSearch {
  baseIds: string[];
  dimension: number;
  embedding: number[];
  limit: number;
  /** Every key must equal the chunk's metadata or its document's tags (jsonb containment). */
  filters?: Record<string, unknown>;
  /** Typed conditions on the document's tag slots, already checked against the base's definitions. */
  tagFilters?: TagFilterSql;
  efSearch: number;
}

/**
 * Nearest chunks by cosine distance. The dimension is a validated integer spliced into the SQL so the
 * expression matches that dimension's partial HNSW index; iterative index scans keep filling the
 * LIMIT when filters drop candidates, and the outer query restores the exact order.
 */
export async function nearestChunks(q: Queryable, s: ChunkSearch): Promise<ChunkHit[]> {
  if (!Number.isSafeInteger(s.dimension) || s.dimension < 1) throw new Error(`invalid dimension ${s.dimension}`);
  const params: unknown[] = [vectorLiteral(s.embedding), s.baseIds, s.limit];
  const filter = tagFilterSql(params, s.filters, s.tagFilters);
  const distance = `(c.embedding::vector(${s.dimension})) <=> $1::vector(${s.dimension})`;
  await q.query(`SELECT set_config('hnsw.ef_search', $1, true), set_config('hnsw.iterative_scan', 'relaxed_order', true)`, [String(s.efSearch)]);
  return q.query<ChunkHit>(
    `WITH nearest AS MATERIALIZED (
       SELECT c.document_id, c.chunk_index, c.knowledge_base_id, c.content, c.metadata, d.filename, d.source_url, d.tag_slots, ${distance} AS distance
         FROM knowledge_chunks c JOIN knowledge_documents d ON d.id = c.document_id
        WHERE c.dimension = ${s.dimension} AND c.knowledge_base_id = ANY($2::uuid[]) AND c.enabled${filter}
        ORDER BY ${distance} LIMIT $3)
     SELECT * FROM nearest ORDER BY distance, document_id, chunk_index`,
    params,
  );
}

/** Chunks of documents that pass the filters, without a query (tag-only search): in document and chunk order. */
export async function filteredChunks(q: Queryable, s: Omit<ChunkSearch, 'embedding' | 'efSearch'>): Promise<ChunkHit[]> {
  const params: unknown[] = [s.baseIds, s.limit];
  const filter = tagFilterSql(params, s.filters, s.tagFilters);
  return q.query<ChunkHit>(
    `SELECT c.document_id, c.chunk_index, c.knowledge_base_id, c.content, c.metadata, d.filename, d.source_url, d.tag_slots, 0::float8 AS distance
       FROM knowledge_chunks c JOIN knowledge_documents d ON d.id = c.document_id
      WHERE c.knowledge_base_id = ANY($1::uuid[]) AND c.enabled${filter}
      ORDER BY d.created_at, c.document_id, c.chunk_index LIMIT $2`,
    params,
  );
}
