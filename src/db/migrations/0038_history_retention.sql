-- Retention of the history that is not runs (docs/architecture.md, "Run-log retention"): audit entries past
-- WEFT_AUDIT_RETENTION_DAYS and keys revoked longer than WEFT_LOG_RETENTION_DAYS are deleted in batches,
-- oldest first, along these indexes (the audit log's own index leads with the workspace).
CREATE INDEX audit_logs_created_idx ON audit_logs (created_at);
CREATE INDEX api_keys_revoked_idx ON api_keys (revoked_at) WHERE revoked_at IS NOT NULL;
