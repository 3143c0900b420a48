-- Recorded clicks on SQLite (store/proposals/clicks.py).

-- name: claim_clicks
-- Lease up to :limit recorded clicks nobody is applying, oldest first. The write transaction
-- holds SQLite's one write lock: no other applier leases meanwhile.
UPDATE recorded_clicks SET leased_until = :lease, attempts = attempts + 1
WHERE id IN (
    SELECT id FROM recorded_clicks
    WHERE leased_until IS NULL OR leased_until <= :now
    ORDER BY id
    LIMIT :limit
)
RETURNING *
