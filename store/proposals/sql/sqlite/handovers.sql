-- Hand-overs to backup approvers (store/proposals/handovers.py): what SQLite writes its own way.

-- name: hand_over_due
-- The hand-over sweep: up to :limit pending, unexpired proposals whose backup approvers are due
-- and not yet offered it are marked handed over, earliest due first. The WHERE of the UPDATE
-- repeats the compare-and-set, so a proposal is handed over once.
UPDATE proposals SET handed_over_at = :now, updated_at = :now
WHERE id IN (
    SELECT id FROM proposals INDEXED BY proposals_backup_due
    WHERE status = 'pending' AND handed_over_at IS NULL AND backup_at IS NOT NULL
      AND backup_at <= :now AND (expires_at IS NULL OR expires_at > :now)
    ORDER BY backup_at, id
    LIMIT :limit
) AND +status = 'pending' AND handed_over_at IS NULL
RETURNING *
