-- Knowledge bases (owned by src/knowledge): documents are parsed, split into chunks and embedded by a
-- durable ingest job; chunks are searched by cosine similarity through pgvector.

CREATE TABLE knowledge_bases (
  id uuid PRIMARY KEY,
  workspace_id uuid NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
  name text NOT NULL,
  description text NOT NULL DEFAULT '',
  -- The embedder that indexed (and must query) this base, and its vectors' dimension.
  embedding_model text NOT NULL,
  embedding_dimension integer NOT NULL CHECK (embedding_dimension > 0),
  chunk_max_size integer NOT NULL,
  chunk_min_size integer NOT NULL,
  chunk_overlap integer NOT NULL,
  created_at timestamptz NOT NULL DEFAULT date_trunc('milliseconds', clock_timestamp()),
  updated_at timestamptz NOT NULL DEFAULT date_trunc('milliseconds', clock_timestamp()),
  UNIQUE (workspace_id, name)
);
CREATE INDEX knowledge_bases_workspace_idx ON knowledge_bases (workspace_id, created_at, id);

CREATE TABLE knowledge_documents (
  id uuid PRIMARY KEY,
  knowledge_base_id uuid NOT NULL REFERENCES knowledge_bases(id) ON DELETE CASCADE,
  workspace_id uuid NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
  filename text NOT NULL,
  mime_type text NOT NULL,
  -- Which parser reads the file (src/knowledge/file-types.ts).
  file_kind text NOT NULL,
  file_size bigint NOT NULL CHECK (file_size >= 0),
  processing_status text NOT NULL DEFAULT 'pending'
    CHECK (processing_status IN ('pending', 'processing', 'completed', 'failed')),
  processing_error text,
  processing_started_at timestamptz,
  processing_completed_at timestamptz,
  -- The ingest job's lease: a job whose process died is taken over once it expires.
  lease_until timestamptz,
  attempts integer NOT NULL DEFAULT 0,
  chunk_count integer NOT NULL DEFAULT 0,
  token_count integer NOT NULL DEFAULT 0,
  character_count integer NOT NULL DEFAULT 0,
  enabled boolean NOT NULL DEFAULT true,
  -- Caller-given tags (search filters) and where the document came from.
  tags jsonb NOT NULL DEFAULT '{}'::jsonb,
  source_url text,
  -- Who pays for the ingest's embeddings (hosted embedders charge per token).
  billed_account text,
  created_at timestamptz NOT NULL DEFAULT date_trunc('milliseconds', clock_timestamp()),
  updated_at timestamptz NOT NULL DEFAULT date_trunc('milliseconds', clock_timestamp())
);
CREATE INDEX knowledge_documents_base_idx ON knowledge_documents (knowledge_base_id, created_at DESC, id);
CREATE INDEX knowledge_documents_workspace_idx ON knowledge_documents (workspace_id);
CREATE INDEX knowledge_documents_unfinished_idx ON knowledge_documents (lease_until)
  WHERE processing_status IN ('pending', 'processing');

-- The uploaded bytes, apart from the document row so that listing documents never reads them. Kept
-- after ingest: they count toward the workspace's storage and let a lost ingest start over.
CREATE TABLE knowledge_files (
  document_id uuid PRIMARY KEY REFERENCES knowledge_documents(id) ON DELETE CASCADE,
  content bytea NOT NULL
);

-- Chunks exist only for completed documents: an ingest writes all of a document's chunks and marks it
-- completed in one transaction. `enabled` mirrors the document's flag so that searches filter chunks
-- without a join before the nearest-neighbour scan.
CREATE TABLE knowledge_chunks (
  document_id uuid NOT NULL REFERENCES knowledge_documents(id) ON DELETE CASCADE,
  chunk_index integer NOT NULL,
  knowledge_base_id uuid NOT NULL REFERENCES knowledge_bases(id) ON DELETE CASCADE,
  enabled boolean NOT NULL DEFAULT true,
  content text NOT NULL,
  token_count integer NOT NULL,
  metadata jsonb NOT NULL DEFAULT '{}'::jsonb,
  dimension integer NOT NULL,
  embedding vector NOT NULL,
  search_text tsvector GENERATED ALWAYS AS (to_tsvector('english', content)) STORED,
  PRIMARY KEY (document_id, chunk_index)
);
CREATE INDEX knowledge_chunks_base_idx ON knowledge_chunks (knowledge_base_id);
CREATE INDEX knowledge_chunks_text_idx ON knowledge_chunks USING gin (search_text);
-- One HNSW index per common dimension (the local model's 512 and the usual hosted models'): bases with
-- different embedders share the table, and each query uses the index of its dimension. Other
-- dimensions are searched exactly (a sequential scan of the base's chunks).
CREATE INDEX knowledge_chunks_hnsw_384 ON knowledge_chunks USING hnsw ((embedding::vector(384)) vector_cosine_ops) WHERE dimension = 384;
CREATE INDEX knowledge_chunks_hnsw_512 ON knowledge_chunks USING hnsw ((embedding::vector(512)) vector_cosine_ops) WHERE dimension = 512;
CREATE INDEX knowledge_chunks_hnsw_768 ON knowledge_chunks USING hnsw ((embedding::vector(768)) vector_cosine_ops) WHERE dimension = 768;
CREATE INDEX knowledge_chunks_hnsw_1024 ON knowledge_chunks USING hnsw ((embedding::vector(1024)) vector_cosine_ops) WHERE dimension = 1024;
CREATE INDEX knowledge_chunks_hnsw_1536 ON knowledge_chunks USING hnsw ((embedding::vector(1536)) vector_cosine_ops) WHERE dimension = 1536;
