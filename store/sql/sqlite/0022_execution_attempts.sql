-- 0022: which attempt at executing a proposal is under way. The first is 1; a person's Retry
-- of an uncertain execution starts the next (retry_execution). An outcome is recorded only
-- for the attempt that is running (record_outcome compares it), so a late answer of an
-- earlier attempt, arriving while a retry executes or after it ended, is never taken for the
-- retry's outcome: the executor audits it as late instead.
ALTER TABLE proposals ADD COLUMN attempt INTEGER NOT NULL DEFAULT 1 CHECK (attempt >= 1);
