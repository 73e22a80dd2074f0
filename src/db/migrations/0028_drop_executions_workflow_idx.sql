-- Every run inserts into each index of `executions`, and this one serves no query. A workflow's run list
-- (GET /api/v2/workflows/{id}/runs) and the cascade of a workflow's deletion both use
-- executions_workflow_started_idx, which also begins with workflow_id. The logs API filters by workspace
-- first (executions_logs_idx). Without it, a sync run costs about 4 % less CPU on the embedded database
-- (bench/RESULTS.md, "what bounds the two misses").
DROP INDEX IF EXISTS executions_workflow_idx;
