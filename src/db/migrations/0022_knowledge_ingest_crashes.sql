-- Ingest containment (src/knowledge/ingest-job.ts): parses of a document that started and never reported
-- back, because the worker parsing it (or the whole process) died. Counted and committed before each parse
-- starts and taken back when the worker answers, so a document that crashes its parser is failed after a
-- few tries instead of being replayed into a crash loop at every restart.
ALTER TABLE knowledge_documents ADD COLUMN crashed_attempts integer NOT NULL DEFAULT 0;
