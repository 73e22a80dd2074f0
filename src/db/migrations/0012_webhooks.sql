-- Webhook triggers (owned by src/webhooks). One row per workflow with a webhook block, kept after an
-- undeploy so the generated path stays the same when the workflow is deployed again.
CREATE TABLE webhooks (
  workflow_id uuid PRIMARY KEY REFERENCES workflows(id) ON DELETE CASCADE,
  workspace_id uuid NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
  block_id text NOT NULL,
  -- The path the trigger answers at (the block's configured path, else generated_path).
  path text NOT NULL,
  generated_path text NOT NULL,
  -- The deployed version holding the block; null while the workflow is not deployed (the path answers 404).
  version_id uuid,
  updated_at timestamptz NOT NULL DEFAULT now()
);
-- A path belongs to one deployed workflow at a time.
CREATE UNIQUE INDEX webhooks_active_path ON webhooks (path) WHERE version_id IS NOT NULL;

-- Delivery claims: one row per delivery key, scoped to the workflow's workspace. The first request
-- inserts it and holds a lease until its answer is stored; duplicates read the stored answer.
CREATE TABLE webhook_deliveries (
  workspace_id uuid NOT NULL,
  delivery_key text NOT NULL,
  workflow_id uuid NOT NULL,
  claim_token text NOT NULL,
  lease_until timestamptz NOT NULL,
  execution_id text,
  -- {status, headers, body} once answered; null while the first request is still deciding.
  answer jsonb,
  created_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (workspace_id, delivery_key)
);
CREATE INDEX webhook_deliveries_created ON webhook_deliveries (created_at);

-- Files uploaded with multipart deliveries (they count toward the workspace's storage).
CREATE TABLE webhook_files (
  id uuid PRIMARY KEY,
  workspace_id uuid NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
  workflow_id uuid NOT NULL REFERENCES workflows(id) ON DELETE CASCADE,
  name text NOT NULL,
  content_type text NOT NULL,
  size bigint NOT NULL,
  data bytea NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX webhook_files_workspace ON webhook_files (workspace_id);
