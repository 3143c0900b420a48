-- Approvals towards a quorum on SQLite (store/approvals.py).

-- name: select_approvals
-- The approvals of several proposals (:ids, a JSON array), oldest first.
SELECT * FROM approvals
WHERE proposal_id IN (SELECT value FROM json_each(:ids))
ORDER BY proposal_id, approved_at, approver
