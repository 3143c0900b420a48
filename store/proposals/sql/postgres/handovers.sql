-- Hand-overs to backup approvers (store/proposals/handovers.py): what PostgreSQL writes its own way.

-- name: hand_over_due
-- The hand-over sweep: up to :limit pending, unexpired proposals whose backup approvers are due
-- and not yet offered it are marked handed over, earliest due first. Rows another transaction
-- holds are skipped, not awaited; the outer WHERE re-checks each locked row.
WITH due AS (
    SELECT id FROM proposals
    WHERE status = 'pending' AND handed_over_at IS NULL AND backup_at IS NOT NULL
      AND backup_at <= :now AND (expires_at IS NULL OR expires_at > :now)
    ORDER BY backup_at, id
    LIMIT :limit
    FOR UPDATE SKIP LOCKED
)
UPDATE proposals AS p SET handed_over_at = :now, updated_at = :now
FROM due
WHERE p.id = due.id AND p.status = 'pending' AND p.handed_over_at IS NULL
RETURNING p.*
