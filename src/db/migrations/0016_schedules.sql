-- Schedule triggers (owned by src/schedules, issue 20). One row per workflow whose active version has a
-- schedule block; version_id is null while the workflow is not deployed (nothing fires).
CREATE TABLE schedules (
  workflow_id uuid PRIMARY KEY REFERENCES workflows(id) ON DELETE CASCADE,
  workspace_id uuid NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
  version_id uuid,
  block_id text NOT NULL,
  -- The block's parsed config: {cron, timezone, intervalSeconds, missedRuns, maxConsecutiveFailures}.
  config jsonb NOT NULL,
  -- Ticks at or before it are handled (fired, skipped or folded into a missed-run run). Set to the
  -- deploy time on every deploy; advanced by the scheduler that handles the ticks after it.
  cursor_at timestamptz NOT NULL,
  enabled boolean NOT NULL DEFAULT true,
  disabled_reason text,
  disabled_at timestamptz,
  consecutive_failures integer NOT NULL DEFAULT 0,
  updated_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX schedules_active_idx ON schedules (workflow_id) WHERE version_id IS NOT NULL AND enabled;

-- One row per (workflow, tick) that was fired: the claim that makes a tick fire once across every
-- process. Inserted in the transaction that advances the cursor past it; the claimant then admits and
-- enqueues the run under a lease (a claim whose process died is taken over once the lease lapses).
CREATE TABLE schedule_ticks (
  workflow_id uuid NOT NULL REFERENCES workflows(id) ON DELETE CASCADE,
  tick_at timestamptz NOT NULL,
  workspace_id uuid NOT NULL,
  version_id uuid NOT NULL,
  missed_ticks integer NOT NULL DEFAULT 0,
  -- claimed: admission and enqueue pending; enqueued: the run exists; refused: limits refused it.
  status text NOT NULL CHECK (status IN ('claimed', 'enqueued', 'refused')),
  lease_until timestamptz,
  execution_id text,
  -- The run's final state once counted toward the schedule's consecutive failures.
  outcome text,
  error text,
  created_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (workflow_id, tick_at)
);
-- Claims to take over (lapsed leases) and runs whose outcome is not counted yet.
CREATE INDEX schedule_ticks_open_idx ON schedule_ticks (workflow_id) WHERE status = 'claimed' OR (status = 'enqueued' AND outcome IS NULL);
