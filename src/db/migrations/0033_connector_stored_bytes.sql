-- What a connector counts toward its workspace's storage limit (docs/architecture.md, Where limits are
-- enforced): its document and the operations resolved from it, as JSON text, its other columns and a fixed 200
-- bytes for the row and its index entries. The resolved operations are the larger part: a 100 KB document
-- whose operations share one large schema by $ref is stored as about 7 MB. Computed by the database, so every
-- write keeps the figure right; the storage figure sums one number per connector.
ALTER TABLE connectors ADD COLUMN stored_bytes bigint GENERATED ALWAYS AS (
  octet_length(spec::text) + octet_length(operations::text) + octet_length(name) + octet_length(base_url)
  + COALESCE(octet_length(auth::text), 0) + 200
) STORED;
