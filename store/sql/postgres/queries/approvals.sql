-- Approvals towards a quorum on PostgreSQL (store/approvals.py).

-- name: select_approvals
-- The approvals of several proposals (:ids, a text[]), oldest first.
SELECT * FROM approvals WHERE proposal_id = ANY(:ids::text[])
ORDER BY proposal_id, approved_at, approver
