-- A deployment's name and description, as the reference's deploy body sends them, shown in the versions list.
-- Both count toward the workspace's storage with their version: the trigger of 0034 now adds them to the
-- workflow's versions_bytes too (the version's own generated stored_bytes stays the definition's, so this
-- migration rewrites no table).
ALTER TABLE workflow_versions ADD COLUMN name text, ADD COLUMN description text;

CREATE OR REPLACE FUNCTION workflow_versions_add_bytes() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  UPDATE workflows
     SET versions_bytes = versions_bytes + NEW.stored_bytes + COALESCE(octet_length(NEW.name), 0) + COALESCE(octet_length(NEW.description), 0)
   WHERE id = NEW.workflow_id;
  RETURN NULL;
END
$$;
