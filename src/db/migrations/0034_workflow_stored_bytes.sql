-- What workflows count toward their workspace's storage limit (docs/architecture.md, Where limits are
-- enforced): the draft (definition, name, description) and every deployed version, each a copy of a definition
-- of up to 2 MB that is kept for good. A version's size is computed by the database; the workflow keeps the sum
-- of its versions' (a trigger adds each new one), so the storage figure reads one number per workflow, never
-- every version a workspace has deployed.
ALTER TABLE workflow_versions ADD COLUMN stored_bytes bigint GENERATED ALWAYS AS (octet_length(definition::text) + 200) STORED;

ALTER TABLE workflows ADD COLUMN versions_bytes bigint NOT NULL DEFAULT 0 CHECK (versions_bytes >= 0);
UPDATE workflows w SET versions_bytes = v.bytes
  FROM (SELECT workflow_id, sum(stored_bytes) AS bytes FROM workflow_versions GROUP BY workflow_id) v
 WHERE v.workflow_id = w.id;

ALTER TABLE workflows ADD COLUMN stored_bytes bigint GENERATED ALWAYS AS (
  octet_length(definition::text) + octet_length(name) + octet_length(description) + 200 + versions_bytes
) STORED;

CREATE FUNCTION workflow_versions_add_bytes() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  UPDATE workflows SET versions_bytes = versions_bytes + NEW.stored_bytes WHERE id = NEW.workflow_id;
  RETURN NULL;
END
$$;
CREATE TRIGGER workflow_versions_add_bytes AFTER INSERT ON workflow_versions
  FOR EACH ROW EXECUTE FUNCTION workflow_versions_add_bytes();
