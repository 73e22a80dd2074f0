// What a knowledge document counts toward its workspace's storage limit (docs/architecture.md, Where limits
// are enforced). A document stores far more than its file once indexed: a 100 KB text cut into small chunks
// holds about ten times that in chunk text, embeddings and full-text entries. The database keeps the
// document's figure in `knowledge_documents.stored_bytes` (migration 0031): its file, its row's text, a fixed
// DOCUMENT_ROW_BYTES, and `chunk_bytes`, which the ingest sets from the estimate below when it writes the chunks.

/** Bytes counted for a document's rows and index entries besides their text (in the migration's expression). */
export const DOCUMENT_ROW_BYTES = 200;

/** Bytes counted per chunk for its row and index entries besides its text and embedding. */
export const CHUNK_ROW_BYTES = 64;

/**
 * The estimate of one chunk: twice its text's UTF-8 bytes (the text, and its full-text index entry, which
 * measured about two thirds of the text on PostgreSQL), its metadata's JSON, 4 bytes per embedding
 * dimension (float4) and CHUNK_ROW_BYTES. Migration 0031 applies the same formula in SQL to chunks written
 * before it.
 */
export function chunkStoredBytes(chunk: { content: string; metadata: Record<string, unknown> }, dimension: number): number {
  return 2 * Buffer.byteLength(chunk.content, 'utf8') + Buffer.byteLength(JSON.stringify(chunk.metadata), 'utf8') + 4 * dimension + CHUNK_ROW_BYTES;
}

export function chunksStoredBytes(chunks: readonly { content: string; metadata: Record<string, unknown> }[], dimension: number): number {
  return chunks.reduce((n, c) => n + chunkStoredBytes(c, dimension), 0);
}
