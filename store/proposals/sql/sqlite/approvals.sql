-- Approvals towards a quorum on SQLite (store/proposals/approvals.py).

-- name: select_approvals
-- The approvals of several proposals (:ids, a JSON array), oldest first.
SELECT * FROM approvals
WHERE proposal_id IN (SELECT value FROM json_each(:ids))
ORDER BY proposal_id, approved_at, approver

-- name: lock_proposal
-- The proposal an approval is about. The write transaction holds SQLite's one write lock, so it
-- cannot change before the approval is counted.
SELECT * FROM proposals WHERE id = :id
