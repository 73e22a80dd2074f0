import type { BaseRow, DocumentRow } from './store.js';

/** The JSON shapes of knowledge bases and documents, as the contract names their fields. */

export interface ChunkingConfig {
  /** Tokens. */
  maxSize: number;
  /** Characters. */
  minSize: number;
  /** Tokens. */
  overlap: number;
}

export const CHUNKING_BOUNDS = {
  maxSize: { min: 100, max: 4000, default: 1024 },
  minSize: { min: 1, max: 2000, default: 100 },
  overlap: { min: 0, max: 500, default: 200 },
} as const;

export const DEFAULT_CHUNKING: ChunkingConfig = {
  maxSize: CHUNKING_BOUNDS.maxSize.default,
  minSize: CHUNKING_BOUNDS.minSize.default,
  overlap: CHUNKING_BOUNDS.overlap.default,
};

export interface PublicBase {
  id: string;
  name: string;
  description: string;
  docCount: number;
  tokenCount: number;
  embeddingModel: string;
  embeddingDimension: number;
  chunkingConfig: ChunkingConfig;
  /** The connector types syncing documents into the base (sim-api 10.1): always none, Weft has no such connectors. */
  connectorTypes: string[];
  createdAt: string;
  updatedAt: string;
}

export const publicBase = (b: BaseRow): PublicBase => ({
  id: b.id,
  name: b.name,
  description: b.description,
  docCount: Number(b.doc_count),
  tokenCount: Number(b.token_count),
  embeddingModel: b.embedding_model,
  embeddingDimension: b.embedding_dimension,
  chunkingConfig: { maxSize: b.chunk_max_size, minSize: b.chunk_min_size, overlap: b.chunk_overlap },
  connectorTypes: [],
  createdAt: b.created_at.toISOString(),
  updatedAt: b.updated_at.toISOString(),
});

export interface PublicDocument {
  id: string;
  knowledgeBaseId: string;
  filename: string;
  fileSize: number;
  mimeType: string;
  processingStatus: DocumentRow['processing_status'];
  chunkCount: number;
  tokenCount: number;
  characterCount: number;
  enabled: boolean;
  tags: Record<string, unknown>;
  /** Typed tags by display name (slot name where no definition names the slot). */
  tagValues: Record<string, unknown>;
  /** The connector that synced the document, and its type (the reference's fields): always null, every document is uploaded. */
  connectorId: string | null;
  connectorType: string | null;
  createdAt: string;
  updatedAt: string;
}

export interface PublicDocumentDetail extends PublicDocument {
  processingError: string | null;
  processingStartedAt: string | null;
  processingCompletedAt: string | null;
  sourceUrl: string | null;
}

const iso = (d: Date | null): string | null => (d ? d.toISOString() : null);

/** The names of a base's tag slots, as far as the wire format needs them. */
export interface TagNames { tag_slot: string; display_name: string }

/** Display name -> value of the slots a document has values in (the slot's name where no definition names it). */
export function namedTagValues(defs: readonly TagNames[], slots: Record<string, unknown> | undefined): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [slot, value] of Object.entries(slots ?? {})) {
    if (value === null || value === undefined) continue;
    out[defs.find((d) => d.tag_slot === slot)?.display_name ?? slot] = value;
  }
  return out;
}

export const publicDocument = (d: DocumentRow, defs: readonly TagNames[] = []): PublicDocument => ({
  id: d.id,
  knowledgeBaseId: d.knowledge_base_id,
  filename: d.filename,
  fileSize: Number(d.file_size),
  mimeType: d.mime_type,
  processingStatus: d.processing_status,
  chunkCount: d.chunk_count,
  tokenCount: d.token_count,
  characterCount: d.character_count,
  enabled: d.enabled,
  tags: d.tags,
  tagValues: namedTagValues(defs, d.tag_slots),
  connectorId: null,
  connectorType: null,
  createdAt: d.created_at.toISOString(),
  updatedAt: d.updated_at.toISOString(),
});

export const publicDocumentDetail = (d: DocumentRow, defs: readonly TagNames[] = []): PublicDocumentDetail => ({
  ...publicDocument(d, defs),
  processingError: d.processing_error,
  processingStartedAt: iso(d.processing_started_at),
  processingCompletedAt: iso(d.processing_completed_at),
  sourceUrl: d.source_url,
});

export interface SearchResultItem {
  documentId: string;
  documentName: string;
  knowledgeBaseId: string;
  sourceUrl: string | null;
  content: string;
  chunkIndex: number;
  similarity: number;
  metadata: Record<string, unknown>;
}
