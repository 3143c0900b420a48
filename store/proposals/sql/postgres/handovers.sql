-- Hand-overs to backup approvers (store/proposals/handovers.py): what PostgreSQL writes its own way.

-- name: hand_over_due
-- The hand-over sweep: up to :limit pending, unexpired proposals whose backup approvers are due
-- and not yet offered it are marked handed over, earliest due first. Rows another transaction
-- holds are skipped, not awaited; the outer WHERE re-checks each locked row, found by its
-- address (joined by id, the plan a pooled connection made while the table was empty walked
-- every pending proposal: 2,009 read to hand over 3 of 2,003).
WITH due AS (
    SELECT ctid AS address FROM proposals
    WHERE status = 'pending' AND handed_over_at IS NULL AND backup_at IS NOT NULL
      AND backup_at <= :now AND (expires_at IS NULL OR expires_at > :now)
    ORDER BY backup_at, id
    LIMIT :limit
    FOR UPDATE SKIP LOCKED
)
UPDATE proposals AS p SET handed_over_at = :now, updated_at = :now
FROM due
WHERE p.ctid = due.address AND p.status = 'pending' AND p.handed_over_at IS NULL
RETURNING p.*
