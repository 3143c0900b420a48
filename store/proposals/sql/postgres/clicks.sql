-- Recorded clicks on PostgreSQL (store/proposals/clicks.py).

-- name: claim_clicks
-- Lease up to :limit recorded clicks nobody is applying, oldest first. Clicks another
-- instance is leasing right now are skipped, not awaited; the outer WHERE re-checks each row.
-- The locked clicks are looked up by key, between the lowest and highest id locked: joined by
-- id or by address, the plan a pooled connection made while no click was recorded (a new
-- database's, kept however many are recorded after) hashed every recorded click to find the
-- ten it leases (1,520 read with 1,500 recorded); a list of ids alone is a near thing for
-- that plan, its range an estimate of one row.
WITH due AS (
    SELECT id FROM recorded_clicks
    WHERE leased_until IS NULL OR leased_until <= :now
    ORDER BY id
    LIMIT :limit
    FOR UPDATE SKIP LOCKED
)
UPDATE recorded_clicks AS c SET leased_until = :lease, attempts = c.attempts + 1
WHERE c.id >= (SELECT min(id) FROM due) AND c.id <= (SELECT max(id) FROM due)
  AND c.id = ANY(ARRAY(SELECT id FROM due))
  AND (c.leased_until IS NULL OR c.leased_until <= :now)
RETURNING c.*
