-- Escalations (store/escalations/verbs.py): what PostgreSQL runs its own way. Instances sweeping or
-- claiming at once take rows with FOR UPDATE SKIP LOCKED, so none does an escalation's
-- re-announcement or an outbox entry twice.

-- name: reannounce_due_escalations
-- Unclaimed escalations last announced at :due or before, announced again fewer than :most
-- times: move announced_at on (the sweep announces each once per period). The locked rows are
-- updated by their address (joined by id, the plan a pooled connection made while the table was
-- empty read every open escalation: 1,509 read to announce 3 of 1,503 again).
WITH due AS (
    SELECT ctid AS address FROM escalations
    WHERE status = 'open' AND announced_at <= :due AND reannouncements < :most
    ORDER BY announced_at, id
    LIMIT :limit
    FOR UPDATE SKIP LOCKED
)
UPDATE escalations AS e
SET announced_at = :now, reannouncements = e.reannouncements + 1, updated_at = :now
FROM due
WHERE e.ctid = due.address AND e.status = 'open' AND e.announced_at <= :due
  AND e.reannouncements < :most
RETURNING e.*

-- name: claim_escalation_deliveries
-- Lease up to :limit due entries, each the first undelivered one of its escalation and lane,
-- as claim_deliveries leases the proposals' (store/proposals/sql/postgres/outbox.sql): each
-- row is locked once it is checked, so the UPDATE re-checks only the lease; "first of its
-- lane" is one lookup of the lane's lowest open id by escalation_outbox_open, and the leased
-- rows are updated by their row address. Written NOT EXISTS and joined by id, the plan made
-- while the outbox was empty (a new database's, which a pooled connection keeps) walked every
-- open entry for each candidate: 16,520 entries read to lease 10 of 1,500.
WITH due AS (
    SELECT o.ctid AS address FROM escalation_outbox AS o
    WHERE o.delivered_at IS NULL AND o.abandoned_at IS NULL
      AND o.next_attempt_at <= :now
      AND (o.leased_until IS NULL OR o.leased_until <= :now)
      AND o.id = (
          SELECT min(e.id) FROM escalation_outbox AS e
          WHERE e.escalation_id = o.escalation_id AND e.lane = o.lane
            AND e.delivered_at IS NULL AND e.abandoned_at IS NULL)
    ORDER BY o.next_attempt_at, o.id
    LIMIT :limit
    FOR UPDATE SKIP LOCKED
)
UPDATE escalation_outbox AS o SET leased_until = :lease, attempts = o.attempts + 1
FROM due
WHERE o.ctid = due.address
  AND (o.leased_until IS NULL OR o.leased_until <= :now)
RETURNING o.*
