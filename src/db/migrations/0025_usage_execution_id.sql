-- Per-run cost (issue 30): a usage event, and the AI request that led to one, carry the execution id of
-- the run that spent it (the run's base charge, and the model calls of its agent, router and evaluator
-- blocks), so the logs API can add up what one run cost. Null for usage no run spent (the AI interface
-- called directly, document embeddings). Events written before this migration have none; a run's base
-- charge is still found by its idempotency key (`run:<execution id>`).
ALTER TABLE usage_events ADD COLUMN execution_id text;
ALTER TABLE ai_requests ADD COLUMN execution_id text;

-- "Sum by execution": partial, so usage without a run (the gateway's hot path) adds no index entry.
CREATE INDEX usage_events_execution_idx ON usage_events (execution_id) WHERE execution_id IS NOT NULL;
CREATE INDEX ai_requests_execution_idx ON ai_requests (execution_id) WHERE execution_id IS NOT NULL;
