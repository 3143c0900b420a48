-- Reminders on SQLite (store/proposals/reminders.py).

-- name: remind_due
-- The reminder sweep: up to :limit pending, unexpired proposals whose reminder is due and not
-- yet sent are marked reminded, earliest due first. The WHERE of the UPDATE repeats the
-- compare-and-set, so a proposal is reminded once. The proposal itself (updated_at) is unchanged.
UPDATE proposals SET reminded_at = :now
WHERE id IN (
    SELECT id FROM proposals INDEXED BY proposals_unreminded
    WHERE status = 'pending' AND reminded_at IS NULL AND remind_at IS NOT NULL
      AND remind_at <= :now AND (expires_at IS NULL OR expires_at > :now)
    ORDER BY remind_at, id
    LIMIT :limit
) AND +status = 'pending' AND reminded_at IS NULL
RETURNING *
