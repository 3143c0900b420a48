-- Reminders on PostgreSQL (store/proposals/reminders.py).

-- name: remind_due
-- The reminder sweep: up to :limit pending, unexpired proposals whose reminder is due and not
-- yet sent are marked reminded, earliest due first. Rows another transaction holds (a claim,
-- another instance's sweep) are skipped, not awaited; the outer WHERE re-checks each locked row,
-- found by its address (joined by id, the plan a pooled connection made while the table was
-- empty walked every pending proposal: 2,009 read to remind 3 of 2,003).
-- The proposal itself (updated_at) is unchanged.
WITH due AS (
    SELECT ctid AS address FROM proposals
    WHERE status = 'pending' AND reminded_at IS NULL AND remind_at IS NOT NULL
      AND remind_at <= :now AND (expires_at IS NULL OR expires_at > :now)
    ORDER BY remind_at, id
    LIMIT :limit
    FOR UPDATE SKIP LOCKED
)
UPDATE proposals AS p SET reminded_at = :now
FROM due
WHERE p.ctid = due.address AND p.status = 'pending' AND p.reminded_at IS NULL
RETURNING p.*
