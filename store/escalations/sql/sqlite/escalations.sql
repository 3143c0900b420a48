-- Escalations (store/escalations/verbs.py): what SQLite runs its own way. It has one writer at a
-- time, so the sweep and the outbox claim need no row locks; PostgreSQL's versions skip rows
-- another instance holds.

-- name: reannounce_due_escalations
-- Unclaimed escalations last announced at :due or before, announced again fewer than :most
-- times: move announced_at on (the sweep announces each once per period).
UPDATE escalations
SET announced_at = :now, reannouncements = reannouncements + 1, updated_at = :now
WHERE id IN (
    SELECT id FROM escalations
    WHERE status = 'open' AND announced_at <= :due AND reannouncements < :most
    ORDER BY announced_at, id
    LIMIT :limit
) AND status = 'open' AND announced_at <= :due AND reannouncements < :most
RETURNING *

-- name: claim_escalation_deliveries
-- Lease up to :limit due entries, each the first undelivered one of its escalation and lane.
UPDATE escalation_outbox SET leased_until = :lease, attempts = attempts + 1
WHERE id IN (
    SELECT o.id FROM escalation_outbox AS o
    WHERE o.delivered_at IS NULL AND o.abandoned_at IS NULL
      AND o.next_attempt_at <= :now
      AND (o.leased_until IS NULL OR o.leased_until <= :now)
      AND NOT EXISTS (
          SELECT 1 FROM escalation_outbox AS e
          WHERE e.escalation_id = o.escalation_id AND e.lane = o.lane AND e.id < o.id
            AND e.delivered_at IS NULL AND e.abandoned_at IS NULL)
    ORDER BY o.next_attempt_at, o.id
    LIMIT :limit
)
RETURNING *
