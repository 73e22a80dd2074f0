-- What a knowledge document counts toward its workspace's storage limit (src/knowledge/stored-bytes.ts;
-- docs/architecture.md, Where limits are enforced): not only its file, but its row's text (name, tags, tag
-- slots, source URL), a fixed 200 bytes for the row, its file's row and their index entries, and an estimate
-- of its chunks, written by the ingest that writes them: per chunk twice its text's UTF-8 bytes (the text and
-- its full-text index), its metadata's JSON, 4 bytes per embedding dimension and 64 bytes of row and index
-- entries. The storage figure sums `stored_bytes`, one number per document: summing the chunks themselves
-- at every write of the workspace would read every chunk it has.
ALTER TABLE knowledge_documents ADD COLUMN chunk_bytes bigint NOT NULL DEFAULT 0 CHECK (chunk_bytes >= 0);

-- Documents indexed before this migration: their chunks, by the same estimate.
UPDATE knowledge_documents d SET chunk_bytes = c.bytes
  FROM (SELECT document_id, sum(2 * octet_length(content) + octet_length(metadata::text) + 4 * dimension + 64) AS bytes
          FROM knowledge_chunks GROUP BY document_id) c
 WHERE c.document_id = d.id;

-- Computed by the database, so that every write of a document's name, tags or tag slots (a tag definition
-- deleted clears its slot on every document) keeps the figure right without code of its own.
ALTER TABLE knowledge_documents ADD COLUMN stored_bytes bigint GENERATED ALWAYS AS (
  file_size + chunk_bytes + 200 + octet_length(filename) + octet_length(mime_type) + octet_length(tags::text)
  + octet_length(tag_slots::text) + COALESCE(octet_length(source_url), 0)
) STORED;

