-- The outbox on SQLite (store/proposals/outbox.py).

-- name: claim_decision_deliveries
-- claim_deliveries for a decision's message update and thread reply alone, claimed first:
-- they are never behind a backlog of new cards (the partial index outbox_due_decisions).
-- Up to :limit proposals whose Slack lane starts with a due decision entry are chosen; each is
-- leased with the entries that follow it in its lane while they are due decision entries too
-- (its update and its reply, say), so that one job delivers them in order from one read.
UPDATE outbox SET leased_until = :lease, attempts = attempts + 1
WHERE id IN (
    SELECT r.id FROM outbox AS r
    WHERE r.proposal_id IN (
        SELECT o.proposal_id FROM outbox AS o
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
    )
      AND r.lane = 'slack' AND r.delivered_at IS NULL AND r.abandoned_at IS NULL
      AND r.effect IN ('slack.update', 'slack.reply')
      AND r.next_attempt_at <= :now
      AND (r.leased_until IS NULL OR r.leased_until <= :now)
      -- no entry before it in its lane that this claim does not take: the run has no gap
      AND NOT EXISTS (
          SELECT 1 FROM outbox AS e
          WHERE e.proposal_id = r.proposal_id AND e.lane = r.lane AND e.id < r.id
            AND e.delivered_at IS NULL AND e.abandoned_at IS NULL
            AND NOT (e.effect IN ('slack.update', 'slack.reply') AND e.next_attempt_at <= :now
                     AND (e.leased_until IS NULL OR e.leased_until <= :now)))
)
RETURNING *

-- name: claim_deliveries
-- Lease up to :limit due entries, each the first undelivered one of its proposal and lane. The
-- write transaction holds SQLite's one write lock: no other worker leases meanwhile.
UPDATE outbox SET leased_until = :lease, attempts = attempts + 1
WHERE id IN (
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
)
RETURNING *
