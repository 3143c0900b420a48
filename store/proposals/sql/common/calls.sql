-- The agents' calls, read back for replay (store/proposals/calls.py): the same SQL on SQLite and PostgreSQL.

-- name: select_calls_since
-- Proposals agents made (not approvers' edits) created at or after :since, in order of creation,
-- a page at a time after the (created_at, id) of the last one read.
SELECT * FROM proposals
WHERE created_at >= :since AND supersedes IS NULL
  AND (created_at > :after_at OR (created_at = :after_at AND id > :after_id))
ORDER BY created_at, id
LIMIT :limit
