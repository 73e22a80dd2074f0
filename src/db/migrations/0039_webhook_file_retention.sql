-- Files uploaded with webhook deliveries go with their runs' logs (WEFT_LOG_RETENTION_DAYS): the retention
-- sweep deletes them oldest first along this index.
CREATE INDEX webhook_files_created ON webhook_files (created_at);
