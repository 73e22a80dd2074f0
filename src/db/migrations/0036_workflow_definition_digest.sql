-- A digest of each draft, computed by the database when the draft is written, beside the versions' (migration
-- 0035). Whether a workflow needs redeploying (GET /api/workflows/{id}/status, which Sim's SDKs poll and no rate
-- limit covers) was answered by reading the draft and the deployed version, up to 2 MB each, and comparing their
-- canonical JSON: about 60 ms of the event loop a call, so one client polling held every other request up to 0.6 s.
-- jsonb's text is canonical, so equal digests mean equal definitions.
ALTER TABLE workflows ADD COLUMN definition_md5 text GENERATED ALWAYS AS (md5(definition::text)) STORED;
