-- The outbox on PostgreSQL (store/outbox.py).

-- name: claim_decision_deliveries
-- claim_deliveries for a decision's message update and thread reply alone, claimed first:
-- they are never behind a backlog of new cards (the partial index outbox_due_decisions).
WITH due AS (
    SELECT o.id FROM outbox AS o
    WHERE o.delivered_at IS NULL AND o.abandoned_at IS NULL
      AND o.next_attempt_at <= :now
      AND o.effect IN ('slack.update', 'slack.reply')
      AND (o.leased_until IS NULL OR o.leased_until <= :now)
      AND NOT EXISTS (
          SELECT 1 FROM outbox AS e
          WHERE e.proposal_id = o.proposal_id AND e.lane = o.lane AND e.id < o.id
            AND e.delivered_at IS NULL AND e.abandoned_at IS NULL)
    ORDER BY o.next_attempt_at, o.id
    LIMIT :limit
    FOR UPDATE SKIP LOCKED
)
UPDATE outbox AS o SET leased_until = :lease, attempts = o.attempts + 1
FROM due
WHERE o.id = due.id AND o.delivered_at IS NULL AND o.abandoned_at IS NULL
  AND (o.leased_until IS NULL OR o.leased_until <= :now)
RETURNING o.*

-- name: claim_deliveries
-- Lease up to :limit due entries, each the first undelivered one of its proposal and lane.
-- Entries another worker is leasing right now are skipped, not awaited; the outer WHERE
-- re-checks each locked row.
WITH due AS (
    SELECT o.id FROM outbox AS o
    WHERE o.delivered_at IS NULL AND o.abandoned_at IS NULL
      AND o.next_attempt_at <= :now
      AND (o.leased_until IS NULL OR o.leased_until <= :now)
      AND NOT EXISTS (
          SELECT 1 FROM outbox AS e
          WHERE e.proposal_id = o.proposal_id AND e.lane = o.lane AND e.id < o.id
            AND e.delivered_at IS NULL AND e.abandoned_at IS NULL)
    ORDER BY o.next_attempt_at, o.id
    LIMIT :limit
    FOR UPDATE SKIP LOCKED
)
UPDATE outbox AS o SET leased_until = :lease, attempts = o.attempts + 1
FROM due
WHERE o.id = due.id AND o.delivered_at IS NULL AND o.abandoned_at IS NULL
  AND (o.leased_until IS NULL OR o.leased_until <= :now)
RETURNING o.*
