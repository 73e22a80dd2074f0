-- Resume claims (issue 27): a claimed resume that is not an async job yet (a sync resume running in the
-- request that claimed it, or a claim whose job is about to be created) holds a lease its holder renews.
-- A claim whose lease lapsed belongs to a process that died: it is released (the pause point can be
-- resumed again) instead of blocking the paused run for good. NULL once an async job runs the resume
-- (the job's own lease covers it) and for pending or finished entries.
ALTER TABLE resume_queue ADD COLUMN lease_until timestamptz;
CREATE INDEX resume_queue_lease_idx ON resume_queue (lease_until) WHERE status = 'claimed' AND lease_until IS NOT NULL;
