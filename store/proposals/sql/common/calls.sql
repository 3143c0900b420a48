-- The agents' calls, read back for replay (store/proposals/calls.py): the same SQL on SQLite and PostgreSQL.

-- name: select_calls_since
-- Proposals agents made (not approvers' edits) created at or after :since, in order of creation,
-- a page at a time after the (created_at, id) of the last one read: by proposals_by_time, each
-- page starts where the last one ended (0030).
SELECT * FROM proposals
WHERE created_at >= :since AND (created_at, id) > (:after_at, :after_id) AND supersedes IS NULL
ORDER BY created_at, id
LIMIT :limit
