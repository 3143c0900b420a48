-- A proposing agent's withdrawal (store/proposals/cancellations.py): the same SQL on SQLite and PostgreSQL.

-- name: cancel
-- The withdrawal: pending and unexpired -> cancelled, by the agent that proposed it only. When
-- it was withdrawn is decided_at; nobody decided it, so decided_by stays empty.
UPDATE proposals SET status = 'cancelled', decided_at = :now, updated_at = :now
WHERE id = :id AND agent = :agent AND status = 'pending'
  AND (expires_at IS NULL OR expires_at > :now)
RETURNING *
