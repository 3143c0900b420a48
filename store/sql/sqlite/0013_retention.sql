-- 0013: retention (countersign retention run). A decided proposal older than the configured age
-- is written to an archive file, then removed with its approvals, review and outbox rows, and
-- recorded in archived_proposals in the same transaction, with an audit entry saying so. Audit
-- entries are never removed: the chain is not rewritten, and `audit verify` checks it as before.
--
-- Approvals and reviews stay append-only for everything else: a row may be deleted only once its
-- proposal is recorded as archived, and a proposal only then too.

CREATE TABLE archived_proposals (
    id           TEXT PRIMARY KEY,   -- the proposal removed from the proposals table
    archived_at  TEXT NOT NULL,
    archive      TEXT NOT NULL       -- the archive file's name, as retention wrote it
) STRICT;

CREATE TRIGGER archived_proposals_refuse_update
BEFORE UPDATE ON archived_proposals
BEGIN
    SELECT RAISE(ABORT, 'archived_proposals: a record of an archived proposal cannot be changed');
END;

CREATE TRIGGER archived_proposals_refuse_delete
BEFORE DELETE ON archived_proposals
BEGIN
    SELECT RAISE(ABORT, 'archived_proposals: a record of an archived proposal cannot be deleted');
END;

CREATE TRIGGER proposals_removed_only_when_archived
BEFORE DELETE ON proposals
WHEN NOT EXISTS (SELECT 1 FROM archived_proposals AS a WHERE a.id = OLD.id)
BEGIN
    SELECT RAISE(ABORT, 'proposals: only an archived proposal can be removed');
END;

DROP TRIGGER approvals_refuse_delete;

CREATE TRIGGER approvals_refuse_delete
BEFORE DELETE ON approvals
WHEN NOT EXISTS (SELECT 1 FROM archived_proposals AS a WHERE a.id = OLD.proposal_id)
BEGIN
    SELECT RAISE(ABORT, 'approvals are append-only: an approval cannot be deleted');
END;

DROP TRIGGER reviews_refuse_delete;

CREATE TRIGGER reviews_refuse_delete
BEFORE DELETE ON reviews
WHEN NOT EXISTS (SELECT 1 FROM archived_proposals AS a WHERE a.id = OLD.proposal_id)
BEGIN
    SELECT RAISE(ABORT, 'reviews are append-only: a verdict cannot be deleted');
END;
