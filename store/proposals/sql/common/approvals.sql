-- Approvals towards a quorum (store/proposals/approvals.py): the same SQL on SQLite and PostgreSQL.

-- name: insert_approval
-- One person's approval, bound to the hash they saw (the primary key refuses a second one).
INSERT INTO approvals (proposal_id, approver, binding_hash, approved_at)
VALUES (:proposal_id, :approver, :binding_hash, :now)

-- name: claim_at_quorum
-- The approval that completes the quorum: pending, unexpired and bound to the contract the
-- approvers saw -> executing, leased to the executor until :lease_until.
UPDATE proposals
SET status = 'executing', decided_by = :actor, decided_at = :now, updated_at = :now,
    lease_until = :lease_until
WHERE id = :id AND status = 'pending' AND (expires_at IS NULL OR expires_at > :now)
  AND binding_hash = :binding_hash
RETURNING *
