-- Typed document tags (issue 28): each knowledge base names up to 17 slots (7 text, 5 number, 2 date,
-- 3 boolean, as the reference service has), and documents carry a value per slot. Searches filter on
-- them with typed operators (src/knowledge/tag-filter-sql.ts).

CREATE TABLE knowledge_tag_definitions (
  id uuid PRIMARY KEY,
  knowledge_base_id uuid NOT NULL REFERENCES knowledge_bases(id) ON DELETE CASCADE,
  tag_slot text NOT NULL CHECK (tag_slot ~ '^(tag[1-7]|number[1-5]|date[1-2]|boolean[1-3])$'),
  display_name text NOT NULL CHECK (char_length(display_name) BETWEEN 1 AND 100),
  field_type text NOT NULL CHECK (field_type IN ('text', 'number', 'date', 'boolean')),
  created_at timestamptz NOT NULL DEFAULT date_trunc('milliseconds', clock_timestamp()),
  updated_at timestamptz NOT NULL DEFAULT date_trunc('milliseconds', clock_timestamp()),
  UNIQUE (knowledge_base_id, tag_slot)
);
-- Names are matched case-insensitively in filters, so two may not differ only in case.
CREATE UNIQUE INDEX knowledge_tag_definitions_name_idx ON knowledge_tag_definitions (knowledge_base_id, lower(display_name));

-- Slot -> value, for the slots the document has a value in (text, number, 'YYYY-MM-DD', boolean).
ALTER TABLE knowledge_documents ADD COLUMN tag_slots jsonb NOT NULL DEFAULT '{}'::jsonb;

-- Full-text search also weighs where a chunk stands (issue 28): its document's name and the chunk's
-- heading path, at weight C beside the content's D. The ingest writes search_text itself; a row written
-- without it still gets its content indexed, as the generated column did.
ALTER TABLE knowledge_chunks ALTER COLUMN search_text DROP EXPRESSION;
CREATE FUNCTION knowledge_chunks_default_search_text() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF NEW.search_text IS NULL THEN
    NEW.search_text := to_tsvector('english', NEW.content);
  END IF;
  RETURN NEW;
END;
$$;
CREATE TRIGGER knowledge_chunks_search_text BEFORE INSERT ON knowledge_chunks
  FOR EACH ROW EXECUTE FUNCTION knowledge_chunks_default_search_text();
