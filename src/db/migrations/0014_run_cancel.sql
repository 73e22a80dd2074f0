-- Runs (issue 18): cancellation in every state, per-run async timeouts, and the v2 runs list.
-- A cancel asked of a run that is running somewhere: the process running it sees this on its next
-- lease renewal and stops the run; a process taking the run over never starts it again.
ALTER TABLE executions ADD COLUMN cancel_requested_at timestamptz;
-- A caller's own timeout for an async run (v2 executionTimeoutSeconds), at most the plan's.
ALTER TABLE executions ADD COLUMN timeout_ms integer;
-- A paused run can be cancelled with its pause.
ALTER TABLE paused_executions DROP CONSTRAINT paused_executions_status_check;
ALTER TABLE paused_executions ADD CONSTRAINT paused_executions_status_check
  CHECK (status IN ('paused', 'partially_resumed', 'fully_resumed', 'failed', 'cancelled'));
-- Runs of a workflow by start time (GET /api/v2/workflows/{id}/runs, keyset pagination).
CREATE INDEX executions_workflow_started_idx ON executions (workflow_id, (COALESCE(started_at, created_at)), id);
