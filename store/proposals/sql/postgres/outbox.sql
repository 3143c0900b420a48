-- The outbox on PostgreSQL (store/proposals/outbox.py).

-- name: claim_decision_deliveries
-- claim_deliveries for a decision's message update and thread reply alone, claimed first:
-- they are never behind a backlog of new cards (the partial index outbox_due_decisions).
-- Up to :limit proposals whose Slack lane starts with a due decision entry are chosen (their
-- first entries locked, skipped when another worker holds them); each is leased with the
-- entries that follow it in its lane while they are due decision entries too (its update and
-- its reply, say), so that one job delivers them in order from one read. A following entry
-- locked elsewhere is skipped, and so is every entry after it: the run leased has no gap.
-- Written so that only the cheap plan exists, as claim_deliveries is: "first of its lane" and
-- "no gap" are lookups in the lane by outbox_open_by_proposal, each head's followers are
-- looked up after it in its lane, and the leased rows are updated by their row address. The
-- followers' effects are a value of the run, not constants: with constants, a database
-- without statistics read outbox_due_decisions (built empty, it claims no rows) for each
-- head. Written NOT EXISTS and joined by id, the plan read every open entry for each head,
-- each follower, and to find and match them: 106,576-112,732 entries read to lease 20.
WITH heads AS (
    SELECT o.ctid AS address, o.id, o.proposal_id FROM outbox AS o
    WHERE o.delivered_at IS NULL AND o.abandoned_at IS NULL
      AND o.next_attempt_at <= :now
      AND o.effect IN ('slack.update', 'slack.reply')
      AND (o.leased_until IS NULL OR o.leased_until <= :now)
      AND o.id = (
          SELECT min(e.id) FROM outbox AS e
          WHERE e.proposal_id = o.proposal_id AND e.lane = o.lane
            AND e.delivered_at IS NULL AND e.abandoned_at IS NULL)
    ORDER BY o.next_attempt_at, o.id
    LIMIT :limit
    FOR UPDATE SKIP LOCKED
), followers AS (
    SELECT r.address, r.id, r.proposal_id FROM heads AS h
    CROSS JOIN LATERAL (
        SELECT r.ctid AS address, r.id, r.proposal_id FROM outbox AS r
        WHERE r.proposal_id = h.proposal_id AND r.lane = 'slack' AND r.id > h.id
          AND r.delivered_at IS NULL AND r.abandoned_at IS NULL
          AND r.effect = ANY((SELECT ARRAY['slack.update', 'slack.reply'])::text[])
          AND r.next_attempt_at <= :now
          AND (r.leased_until IS NULL OR r.leased_until <= :now)
        FOR UPDATE SKIP LOCKED
    ) AS r
), run AS (
    SELECT address, id, proposal_id FROM heads
    UNION ALL SELECT address, id, proposal_id FROM followers
)
UPDATE outbox AS o SET leased_until = :lease, attempts = o.attempts + 1
FROM run
WHERE o.ctid = run.address
  AND (o.leased_until IS NULL OR o.leased_until <= :now)
  -- no entry before it in its lane that this claim does not take: the run has no gap. Taken
  -- means the version at the address locked: an entry another transaction changed after this
  -- statement's snapshot comes back locked at its new address, which the snapshot does not see,
  -- so it is not updated, and by id it would count as taken (its follower then leased alone)
  AND (
      SELECT min(e.id) FROM outbox AS e
      WHERE e.proposal_id = o.proposal_id AND e.lane = o.lane AND e.id < o.id
        AND e.delivered_at IS NULL AND e.abandoned_at IS NULL
        AND e.ctid <> ALL(ARRAY(SELECT address FROM run WHERE run.proposal_id = o.proposal_id))
  ) IS NULL
RETURNING o.*

-- name: claim_deliveries
-- Lease up to :limit due entries, each the first undelivered one of its proposal and lane.
-- Entries another worker is leasing right now are skipped, not awaited; each row is locked
-- once it is checked (a row changed meanwhile is checked again as it now is), so the UPDATE
-- re-checks only the lease, not the conditions of an open entry: stated there, they let the
-- planner scan the open entries' indexes instead.
-- Written so that only the cheap plan exists, whatever the planner's statistics (a new
-- database has none, and its partial indexes, built empty, claim no rows): "first of its
-- lane" is one lookup of the lane's lowest open id by outbox_open_by_proposal (as an
-- anti-join it was planned as a scan of the whole open outbox per candidate: 315 ms a claim
-- with 4,800 open entries), and the leased rows are updated by their row address, one lookup
-- each (a join by id walked every open entry; a list of addresses, = ANY(ARRAY(...)), was
-- read by a whole scan of the outbox in the generic plan a pooled connection made while it
-- was empty: 1,530 rows read to lease 10).
WITH due AS (
    SELECT o.ctid AS address FROM outbox AS o
    WHERE o.delivered_at IS NULL AND o.abandoned_at IS NULL
      AND o.next_attempt_at <= :now
      AND (o.leased_until IS NULL OR o.leased_until <= :now)
      AND o.id = (
          SELECT min(e.id) FROM outbox AS e
          WHERE e.proposal_id = o.proposal_id AND e.lane = o.lane
            AND e.delivered_at IS NULL AND e.abandoned_at IS NULL)
    ORDER BY o.next_attempt_at, o.id
    LIMIT :limit
    FOR UPDATE SKIP LOCKED
)
UPDATE outbox AS o SET leased_until = :lease, attempts = o.attempts + 1
FROM due
WHERE o.ctid = due.address
  AND (o.leased_until IS NULL OR o.leased_until <= :now)
RETURNING o.*
