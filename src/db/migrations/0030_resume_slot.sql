-- A resume queued behind another one keeps the concurrency slot its admission took, until its job ends
-- (src/runs/pauses.ts): without it, the queued resume ran later with no slot, outside the plan's limit.
ALTER TABLE resume_queue ADD COLUMN slot_token text;
