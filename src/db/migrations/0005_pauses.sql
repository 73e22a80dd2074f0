-- Human in the loop: a paused run's snapshot (its completed steps), its pause points and the resume queue.
CREATE TABLE paused_executions (
  id uuid PRIMARY KEY,
  workspace_id uuid NOT NULL,
  workflow_id uuid NOT NULL,
  execution_id text NOT NULL UNIQUE REFERENCES executions(id) ON DELETE CASCADE,
  version_id uuid NOT NULL,
  mode text NOT NULL CHECK (mode IN ('sync', 'async')),
  billed_account text NOT NULL,
  status text NOT NULL CHECK (status IN ('paused', 'partially_resumed', 'fully_resumed', 'failed')),
  input jsonb NOT NULL,
  steps jsonb NOT NULL,
  pause_points jsonb NOT NULL,
  total_pause_count integer NOT NULL DEFAULT 0,
  resumed_count integer NOT NULL DEFAULT 0,
  metadata jsonb NOT NULL DEFAULT '{}'::jsonb,
  trigger_ids jsonb NOT NULL DEFAULT '[]'::jsonb,
  paused_at timestamptz NOT NULL DEFAULT date_trunc('milliseconds', clock_timestamp()),
  updated_at timestamptz NOT NULL DEFAULT date_trunc('milliseconds', clock_timestamp()),
  expires_at timestamptz,
  next_timeout_at timestamptz
);
CREATE INDEX paused_executions_timeout_idx ON paused_executions (next_timeout_at) WHERE next_timeout_at IS NOT NULL;

CREATE TABLE resume_queue (
  id uuid PRIMARY KEY,
  paused_execution_id uuid NOT NULL REFERENCES paused_executions(id) ON DELETE CASCADE,
  parent_execution_id text NOT NULL,
  new_execution_id text NOT NULL UNIQUE,
  context_id text NOT NULL,
  resume_input jsonb,
  status text NOT NULL CHECK (status IN ('pending', 'claimed', 'completed', 'failed')),
  queued_at timestamptz NOT NULL DEFAULT date_trunc('milliseconds', clock_timestamp()),
  claimed_at timestamptz,
  completed_at timestamptz,
  failure_reason text
);
CREATE INDEX resume_queue_order_idx ON resume_queue (paused_execution_id, status, queued_at);

-- An async job that resumes a paused run points at its resume entry.
ALTER TABLE executions ADD COLUMN resume_entry_id uuid;
