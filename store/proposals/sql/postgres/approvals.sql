-- Approvals towards a quorum on PostgreSQL (store/proposals/approvals.py).

-- name: select_approvals
-- The approvals of several proposals (:ids, a text[]), oldest first.
SELECT * FROM approvals WHERE proposal_id = ANY(:ids::text[])
ORDER BY proposal_id, approved_at, approver

-- name: lock_proposal
-- The proposal an approval is about, locked until the transaction ends: approvals of one
-- proposal queue here, so each counts the approvals committed before it.
SELECT * FROM proposals WHERE id = :id FOR UPDATE
