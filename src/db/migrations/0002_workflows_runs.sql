CREATE TABLE workflows (
  id uuid PRIMARY KEY,
  workspace_id uuid NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
  name text NOT NULL,
  description text NOT NULL DEFAULT '',
  definition jsonb NOT NULL,
  active_version_id uuid,
  deployed_at timestamptz,
  created_by uuid,
  created_at timestamptz NOT NULL DEFAULT date_trunc('milliseconds', clock_timestamp()),
  updated_at timestamptz NOT NULL DEFAULT date_trunc('milliseconds', clock_timestamp()),
  UNIQUE (workspace_id, name)
);
CREATE INDEX workflows_page_idx ON workflows (workspace_id, created_at, id);

CREATE TABLE workflow_versions (
  id uuid PRIMARY KEY,
  workflow_id uuid NOT NULL REFERENCES workflows(id) ON DELETE CASCADE,
  workspace_id uuid NOT NULL,
  version integer NOT NULL,
  definition jsonb NOT NULL,
  created_by uuid,
  created_at timestamptz NOT NULL DEFAULT date_trunc('milliseconds', clock_timestamp()),
  UNIQUE (workflow_id, version)
);

-- One row per run: the job state of async runs and the execution log of every run.
CREATE TABLE executions (
  id text PRIMARY KEY,
  workspace_id uuid NOT NULL,
  workflow_id uuid NOT NULL,
  version_id uuid,
  mode text NOT NULL CHECK (mode IN ('sync', 'async')),
  trigger text NOT NULL DEFAULT 'api',
  status text NOT NULL CHECK (status IN ('queued', 'processing', 'completed', 'failed', 'paused', 'cancelled')),
  level text NOT NULL DEFAULT 'info',
  billed_account text NOT NULL,
  api_key_id uuid,
  input jsonb NOT NULL DEFAULT '{}'::jsonb,
  output jsonb,
  error text,
  error_block text,
  trace jsonb,
  created_at timestamptz NOT NULL DEFAULT date_trunc('milliseconds', clock_timestamp()),
  started_at timestamptz,
  ended_at timestamptz,
  duration_ms integer,
  lease_until timestamptz,
  attempts integer NOT NULL DEFAULT 0
);
CREATE INDEX executions_logs_idx ON executions (workspace_id, created_at DESC, id DESC);
CREATE INDEX executions_workflow_idx ON executions (workflow_id, created_at DESC);
CREATE INDEX executions_pending_idx ON executions (status, created_at) WHERE status IN ('queued', 'processing');

-- Durable steps of async runs: a block's output is recorded before its dependants start.
CREATE TABLE execution_steps (
  execution_id text NOT NULL REFERENCES executions(id) ON DELETE CASCADE,
  step_key text NOT NULL,
  block_id text NOT NULL,
  output jsonb,
  finished_at timestamptz NOT NULL DEFAULT date_trunc('milliseconds', clock_timestamp()),
  PRIMARY KEY (execution_id, step_key)
);
