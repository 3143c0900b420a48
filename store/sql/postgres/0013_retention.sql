-- 0013: retention (countersign retention run). A decided proposal older than the configured age
-- is written to an archive file, then removed with its approvals, review and outbox rows, and
-- recorded in archived_proposals in the same transaction, with an audit entry saying so. Audit
-- entries are never removed: the chain is not rewritten, and `audit verify` checks it as before.
--
-- Approvals and reviews stay append-only for everything else: a row may be deleted only once its
-- proposal is recorded as archived, and a proposal only then too.

CREATE TABLE archived_proposals (
    id           text PRIMARY KEY,   -- the proposal removed from the proposals table
    archived_at  timestamptz NOT NULL,
    archive      text NOT NULL       -- the archive file's name, as retention wrote it
);

CREATE FUNCTION archived_proposals_are_written_once() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'archived_proposals: a record of an archived proposal cannot be changed or deleted (%)', TG_OP
        USING ERRCODE = 'integrity_constraint_violation';
END;
$$;

CREATE TRIGGER archived_proposals_refuse_update_and_delete
BEFORE UPDATE OR DELETE ON archived_proposals
FOR EACH ROW EXECUTE FUNCTION archived_proposals_are_written_once();

CREATE TRIGGER archived_proposals_refuse_truncate
BEFORE TRUNCATE ON archived_proposals
FOR EACH STATEMENT EXECUTE FUNCTION archived_proposals_are_written_once();

-- A proposal, its approvals and its review are deleted only once the proposal is archived.
CREATE FUNCTION removed_only_when_archived() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    proposal text;
BEGIN
    IF TG_TABLE_NAME = 'proposals' THEN  -- each branch reads a column only its table has
        proposal := OLD.id;
    ELSE
        proposal := OLD.proposal_id;
    END IF;
    IF NOT EXISTS (SELECT 1 FROM archived_proposals WHERE id = proposal) THEN
        RAISE EXCEPTION '%: only the rows of an archived proposal can be removed', TG_TABLE_NAME
            USING ERRCODE = 'integrity_constraint_violation';
    END IF;
    RETURN OLD;
END;
$$;

CREATE TRIGGER proposals_removed_only_when_archived
BEFORE DELETE ON proposals
FOR EACH ROW EXECUTE FUNCTION removed_only_when_archived();

DROP TRIGGER approvals_refuse_update_and_delete ON approvals;

CREATE TRIGGER approvals_refuse_update
BEFORE UPDATE ON approvals
FOR EACH ROW EXECUTE FUNCTION approvals_are_append_only();

CREATE TRIGGER approvals_removed_only_when_archived
BEFORE DELETE ON approvals
FOR EACH ROW EXECUTE FUNCTION removed_only_when_archived();

DROP TRIGGER reviews_refuse_update_and_delete ON reviews;

CREATE TRIGGER reviews_refuse_update
BEFORE UPDATE ON reviews
FOR EACH ROW EXECUTE FUNCTION reviews_are_append_only();

CREATE TRIGGER reviews_removed_only_when_archived
BEFORE DELETE ON reviews
FOR EACH ROW EXECUTE FUNCTION removed_only_when_archived();
