-- Connectors (src/connectors/): an OpenAPI document registered in a workspace. The document is stored
-- dereferenced as given; `operations` is what was derived from it when it was saved (operation ids,
-- methods, paths and JSON Schemas), so runs never parse the document again. `auth` names a workspace
-- secret, never a value.
CREATE TABLE connectors (
  id uuid PRIMARY KEY,
  workspace_id uuid NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
  name text NOT NULL,
  base_url text NOT NULL,
  spec jsonb NOT NULL,
  operations jsonb NOT NULL,
  auth jsonb,
  created_by uuid,
  created_at timestamptz NOT NULL DEFAULT date_trunc('milliseconds', clock_timestamp()),
  updated_at timestamptz NOT NULL DEFAULT date_trunc('milliseconds', clock_timestamp())
);
CREATE INDEX connectors_workspace ON connectors (workspace_id, created_at, id);
