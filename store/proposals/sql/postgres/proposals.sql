-- The sweeps over proposals on PostgreSQL (store/proposals/verbs.py). Rows another transaction holds
-- (a decision, an outcome being recorded, another instance's sweep) are skipped, not awaited; the
-- outer WHERE re-checks each locked row.

-- name: reclaim_abandoned
-- Executions whose executor did not record an outcome before its lease ran out (up to :limit,
-- oldest lease first) -> needs_reconciliation.
WITH abandoned AS (
    SELECT id FROM proposals
    WHERE status = 'executing' AND lease_until <= :now
    ORDER BY lease_until, id
    LIMIT :limit
    FOR UPDATE SKIP LOCKED
)
UPDATE proposals AS p SET status = 'needs_reconciliation', outcome = :outcome, updated_at = :now
FROM abandoned
WHERE p.id = abandoned.id AND p.status = 'executing'
RETURNING p.*

-- name: expire_due
-- The expiry sweep: up to :limit overdue pending proposals -> expired, oldest expiry first.
WITH due AS (
    SELECT id FROM proposals
    WHERE status = 'pending' AND expires_at <= :now
    ORDER BY expires_at, id
    LIMIT :limit
    FOR UPDATE SKIP LOCKED
)
UPDATE proposals AS p SET status = 'expired', updated_at = :now
FROM due
WHERE p.id = due.id AND p.status = 'pending'
RETURNING p.*
