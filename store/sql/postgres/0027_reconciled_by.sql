-- 0027: who last answered for an uncertain execution, and when: a person's Retry
-- (retry_execution) or their record of what happened (resolve_reconciliation). A recorded
-- click applied twice at once (its lease ended while its first application still ran) knows
-- the answer made by the same person at or after its moment as its own, as it knows their
-- approval, rejection or extension (bot/flow/decide.py, since): it is not told that the
-- proposal "is being executed right now" or "was already decided" by its own answer.
ALTER TABLE proposals
    ADD COLUMN reconciled_by text,
    ADD COLUMN reconciled_at timestamptz,
    ADD CONSTRAINT proposals_reconciliation_names_its_person
        CHECK ((reconciled_by IS NULL) = (reconciled_at IS NULL));
