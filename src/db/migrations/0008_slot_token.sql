-- The concurrency slot an async run holds from admission until it ends; whichever worker runs it frees it.
ALTER TABLE executions ADD COLUMN slot_token text;
