-- Digests (store/digests/verbs.py): what PostgreSQL writes its own way. A list of
-- ids is one text[] parameter (outbox ids are cast to bigint[]); leases are taken
-- FOR UPDATE SKIP LOCKED, as claim_deliveries takes them, so instances filling digests at once
-- never lease one entry twice.

-- name: attach_digest_items
-- The items not yet shown anywhere join the digest and its message (the others stay as they
-- are), shown to people from now (shown_at, 0032); the ids of those that joined come back.
UPDATE proposals
SET digest_id = :digest_id, slack_channel = :channel, slack_ts = :ts, updated_at = :now,
    shown_at = :now
WHERE id = ANY(:ids::text[]) AND slack_ts IS NULL AND digest_id IS NULL
RETURNING id

-- name: select_known_proposal_ids
-- Which of these ids are proposals.
SELECT id FROM proposals WHERE id = ANY(:ids::text[])

-- name: select_proposals_by_ids
-- Several proposals by id, in one read.
SELECT * FROM proposals WHERE id = ANY(:ids::text[])

-- name: claim_similar_posts
-- More due posts like the ones being grouped: pending, never shown, same channel, operation and
-- requester and waiting in no batch, each the first undelivered entry of its proposal's lane,
-- oldest first. The similar proposals are walked in that order by their index
-- (proposals_unshown, 0025) and the walk stops at the limit: neither a backlog of other posts
-- nor one of similar posts still to show is read, whatever the planner's statistics say.
-- Entries another worker is leasing right now are skipped; each row is locked once it is
-- checked, so the UPDATE re-checks only the lease and finds the rows by their address (as in
-- claim_deliveries: a join by id walked every open entry on a database without statistics).
WITH due AS (
    SELECT o.address FROM proposals AS p
    CROSS JOIN LATERAL (
        SELECT o.ctid AS address, o.id FROM outbox AS o
        WHERE o.proposal_id = p.id AND o.effect = 'slack.post'
          AND o.delivered_at IS NULL AND o.abandoned_at IS NULL
          AND o.next_attempt_at <= :now
          AND (o.leased_until IS NULL OR o.leased_until <= :now)
          AND NOT EXISTS (
              SELECT 1 FROM outbox AS e
              WHERE e.proposal_id = o.proposal_id AND e.lane = o.lane AND e.id < o.id
                AND e.delivered_at IS NULL AND e.abandoned_at IS NULL)
        ORDER BY o.id
        FOR UPDATE SKIP LOCKED
    ) AS o
    WHERE p.channel = :channel AND p.operation = :operation AND p.requested_by = :requested_by
      AND p.status = 'pending' AND p.slack_ts IS NULL AND p.batch_id IS NULL
    ORDER BY p.created_at, p.id
    LIMIT :limit
)
UPDATE outbox AS o SET leased_until = :lease, attempts = o.attempts + 1
FROM due
WHERE o.ctid = due.address
  AND (o.leased_until IS NULL OR o.leased_until <= :now)
RETURNING o.*

-- name: claim_digest_deliveries
-- More due entries of one effect for a digest's items, each first in its proposal's lane.
-- Written so that only the cheap plan exists, as claim_deliveries is: the digest's items are
-- walked by their index (proposals_digest_items), each one's entry looked up by
-- outbox_open_by_proposal, "first of its lane" is the lane's lowest open id, and the locked
-- rows are updated by their row address. The effect is a value of the run, not a constant:
-- known to the plan, it let a database without statistics read outbox_due_decisions (built
-- empty, it claims no rows) for each item. Joined the other way and written NOT EXISTS, the
-- plan walked the outbox's due entries to find the digest's and every open entry for each:
-- 34,859-43,968 entries read to lease a digest's 10 updates behind 1,500 other proposals'.
-- Each item's entry is locked as it is found, before the sort: a digest holds at most
-- DIGEST_MAX items, the limit its caller asks for, so those locked are those leased.
WITH due AS (
    SELECT o.address FROM proposals AS p
    CROSS JOIN LATERAL (
        SELECT o.ctid AS address, o.next_attempt_at, o.id FROM outbox AS o
        WHERE o.proposal_id = p.id AND o.effect = (SELECT :effect::text)
          AND o.delivered_at IS NULL AND o.abandoned_at IS NULL
          AND o.next_attempt_at <= :now
          AND (o.leased_until IS NULL OR o.leased_until <= :now)
          AND o.id = (
              SELECT min(e.id) FROM outbox AS e
              WHERE e.proposal_id = o.proposal_id AND e.lane = o.lane
                AND e.delivered_at IS NULL AND e.abandoned_at IS NULL)
        FOR UPDATE SKIP LOCKED
    ) AS o
    WHERE p.digest_id = :digest_id
    ORDER BY o.next_attempt_at, o.id
    LIMIT :limit
)
UPDATE outbox AS o SET leased_until = :lease, attempts = o.attempts + 1
FROM due
WHERE o.ctid = due.address
  AND (o.leased_until IS NULL OR o.leased_until <= :now)
RETURNING o.*

-- name: complete_deliveries
-- Several entries delivered.
UPDATE outbox SET delivered_at = :now, leased_until = NULL
WHERE id = ANY(:ids::text[]::bigint[]) AND delivered_at IS NULL

-- name: retry_deliveries
-- Several entries not delivered this time: release the leases, try again at :at.
UPDATE outbox SET next_attempt_at = :at, leased_until = NULL, last_error = :error
WHERE id = ANY(:ids::text[]::bigint[]) AND delivered_at IS NULL

-- name: defer_deliveries
-- Several leased entries not attempted: due again at :at, their claim's attempt taken back.
UPDATE outbox SET next_attempt_at = :at, leased_until = NULL, attempts = greatest(attempts - 1, 0)
WHERE id = ANY(:ids::text[]::bigint[]) AND delivered_at IS NULL AND leased_until IS NOT NULL
