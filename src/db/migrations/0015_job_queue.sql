-- Dispatch without Redis (issue 16): async jobs handed to worker processes through PostgreSQL alone.
-- A row is one dispatch of a job (the durable record of the work stays in its own table, e.g.
-- executions): waiting while claimed_until is NULL, running while a worker's claim lasts (renewed
-- while the handler runs; an expired claim is released and the job delivered again), deleted when
-- the handler returns. The primary key deduplicates a dispatch that is still pending.
CREATE TABLE job_queue (
  queue text NOT NULL,
  job_id text NOT NULL,
  dispatch integer NOT NULL DEFAULT 0,
  enqueued_at timestamptz NOT NULL DEFAULT clock_timestamp(),
  claimed_until timestamptz,
  PRIMARY KEY (queue, job_id, dispatch)
);
-- Claims take the oldest waiting rows (FOR UPDATE SKIP LOCKED); the sweep finds expired claims.
CREATE INDEX job_queue_waiting_idx ON job_queue (queue, enqueued_at) WHERE claimed_until IS NULL;
CREATE INDEX job_queue_claimed_idx ON job_queue (claimed_until) WHERE claimed_until IS NOT NULL;
