-- Retention (store/retention.py): the query whose parameter PostgreSQL needs typed.

-- name: record_archived_proposal
-- Record the proposal as archived, if it is still as it was exported: decided, unchanged since
-- :before, and with no audit entry after :through_seq (nor one not yet sealed into the
-- chain, which has no seq: it came later). No row back: it stays.
INSERT INTO archived_proposals (id, archived_at, archive)
SELECT p.id, :now, :archive FROM proposals AS p
WHERE p.id = :id AND p.updated_at < :before
  AND p.status NOT IN ('pending', 'executing', 'needs_reconciliation')
  AND NOT EXISTS (SELECT 1 FROM audit_log AS a
                  WHERE a.proposal_id = p.id AND (a.seq IS NULL OR a.seq > :through_seq))
RETURNING id
