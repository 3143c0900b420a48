-- Digests (store/digests/verbs.py): what SQLite writes its own way. A list of
-- ids is one JSON text parameter, read with json_each; several leases are taken by one UPDATE
-- (SQLite has a single writer, so no two claims interleave).

-- name: attach_digest_items
-- The items not yet shown anywhere join the digest and its message (the others stay as they
-- are), shown to people from now (shown_at, 0032); the ids of those that joined come back.
UPDATE proposals
SET digest_id = :digest_id, slack_channel = :channel, slack_ts = :ts, updated_at = :now,
    shown_at = :now
WHERE id IN (SELECT value FROM json_each(:ids)) AND slack_ts IS NULL AND digest_id IS NULL
RETURNING id

-- name: select_known_proposal_ids
-- Which of these ids are proposals.
SELECT id FROM proposals WHERE id IN (SELECT value FROM json_each(:ids))

-- name: select_proposals_by_ids
-- Several proposals by id, in one read.
SELECT * FROM proposals WHERE id IN (SELECT value FROM json_each(:ids))

-- name: claim_similar_posts
-- More due posts like the ones being grouped: pending, never shown, same channel, operation and
-- requester and waiting in no batch, each the first undelivered entry of its proposal's lane,
-- oldest first. The similar proposals are walked in that order by their index
-- (proposals_unshown, 0025) and the walk stops at the limit: neither a backlog of other posts
-- nor one of similar posts still to show is read.
UPDATE outbox SET leased_until = :lease, attempts = attempts + 1
WHERE id IN (
    SELECT o.id FROM proposals AS p INDEXED BY proposals_unshown
    JOIN outbox AS o ON o.proposal_id = p.id
    WHERE p.channel = :channel AND p.operation = :operation AND p.requested_by = :requested_by
      AND p.status = 'pending' AND p.slack_ts IS NULL AND p.batch_id IS NULL
      AND o.effect = 'slack.post' AND o.delivered_at IS NULL AND o.abandoned_at IS NULL
      AND o.next_attempt_at <= :now
      AND (o.leased_until IS NULL OR o.leased_until <= :now)
      AND NOT EXISTS (
          SELECT 1 FROM outbox AS e
          WHERE e.proposal_id = o.proposal_id AND e.lane = o.lane AND e.id < o.id
            AND e.delivered_at IS NULL AND e.abandoned_at IS NULL)
    ORDER BY p.created_at, p.id
    LIMIT :limit
)
RETURNING *

-- name: claim_digest_deliveries
-- More due entries of one effect for a digest's items, each first in its proposal's lane.
UPDATE outbox SET leased_until = :lease, attempts = attempts + 1
WHERE id IN (
    SELECT o.id FROM outbox AS o JOIN proposals AS p ON p.id = o.proposal_id
    WHERE p.digest_id = :digest_id AND o.effect = :effect
      AND o.delivered_at IS NULL AND o.abandoned_at IS NULL
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

-- name: complete_deliveries
-- Several entries delivered.
UPDATE outbox SET delivered_at = :now, leased_until = NULL
WHERE id IN (SELECT value FROM json_each(:ids)) AND delivered_at IS NULL

-- name: retry_deliveries
-- Several entries not delivered this time: release the leases, try again at :at.
UPDATE outbox SET next_attempt_at = :at, leased_until = NULL, last_error = :error
WHERE id IN (SELECT value FROM json_each(:ids)) AND delivered_at IS NULL

-- name: defer_deliveries
-- Several leased entries not attempted: due again at :at, their claim's attempt taken back.
UPDATE outbox SET next_attempt_at = :at, leased_until = NULL, attempts = max(attempts - 1, 0)
WHERE id IN (SELECT value FROM json_each(:ids)) AND delivered_at IS NULL
  AND leased_until IS NOT NULL
