-- Reminders and the one extension (store/proposals/reminders.py): the same SQL on SQLite and PostgreSQL.

-- name: extend_expiry
-- The one extension: pending, unexpired, never extended, and still expiring when it was read
-- (:previous) -> expires at :until, naming who extended it. A reminder not yet sent moves to
-- :remind_at; one already sent stays. A concurrent extension makes this find no row.
UPDATE proposals
SET expires_at = :until, extended_by = :actor, extended_at = :now, updated_at = :now,
    remind_at = CASE WHEN reminded_at IS NULL THEN :remind_at ELSE remind_at END
WHERE id = :id AND status = 'pending' AND extended_by IS NULL
  AND expires_at = :previous AND expires_at > :now AND expires_at < :until
RETURNING *
