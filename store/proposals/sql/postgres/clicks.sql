-- Recorded clicks on PostgreSQL (store/proposals/clicks.py).

-- name: claim_clicks
-- Lease up to :limit recorded clicks nobody is applying, oldest first. Clicks another
-- instance is leasing right now are skipped, not awaited; the outer WHERE re-checks each row.
WITH due AS (
    SELECT id FROM recorded_clicks
    WHERE leased_until IS NULL OR leased_until <= :now
    ORDER BY id
    LIMIT :limit
    FOR UPDATE SKIP LOCKED
)
UPDATE recorded_clicks AS c SET leased_until = :lease, attempts = c.attempts + 1
FROM due
WHERE c.id = due.id AND (c.leased_until IS NULL OR c.leased_until <= :now)
RETURNING c.*
