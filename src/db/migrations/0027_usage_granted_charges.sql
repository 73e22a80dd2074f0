-- Admission reserves base charges for several runs in one statement (issue 30: one statement per run
-- bounded the default configuration's throughput). The statement that reserves says how many of the
-- charges it was asked for fit under the cap, in place of whether its one charge did.
ALTER TABLE usage_totals ADD COLUMN last_granted integer NOT NULL DEFAULT 0;
ALTER TABLE usage_totals DROP COLUMN last_admitted;
