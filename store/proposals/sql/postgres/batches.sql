-- Batches (store/proposals/batches.py): what PostgreSQL writes its own way (a list of ids is an array).

-- name: claim_batch_posts
-- Every due post of the batch's proposals but those the caller holds, leased to the worker that
-- leased the batch (lease_batch): it alone posts them, so their own leases do not stop it.
UPDATE outbox AS o SET leased_until = :lease, attempts = o.attempts + 1
FROM proposals AS p
WHERE p.id = o.proposal_id AND p.batch_id = :batch_id AND o.effect = 'slack.post'
  AND o.delivered_at IS NULL AND o.abandoned_at IS NULL AND o.next_attempt_at <= :now
  AND NOT (o.id = ANY(:held::text[]::bigint[]))
  AND NOT EXISTS (
      SELECT 1 FROM outbox AS e
      WHERE e.proposal_id = o.proposal_id AND e.lane = o.lane AND e.id < o.id
        AND e.delivered_at IS NULL AND e.abandoned_at IS NULL)
RETURNING o.*
