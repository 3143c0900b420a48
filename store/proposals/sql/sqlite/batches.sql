-- Batches (store/proposals/batches.py): what SQLite writes its own way (a list of ids is JSON text).

-- name: claim_batch_posts
-- Every due post of the batch's proposals but those the caller holds, leased to the worker that
-- leased the batch (lease_batch): it alone posts them, so their own leases do not stop it.
UPDATE outbox SET leased_until = :lease, attempts = attempts + 1
WHERE id IN (
    SELECT o.id FROM proposals AS p JOIN outbox AS o ON o.proposal_id = p.id
    WHERE p.batch_id = :batch_id AND o.effect = 'slack.post'
      AND o.delivered_at IS NULL AND o.abandoned_at IS NULL AND o.next_attempt_at <= :now
      AND o.id NOT IN (SELECT value FROM json_each(:held))
      AND NOT EXISTS (
          SELECT 1 FROM outbox AS e
          WHERE e.proposal_id = o.proposal_id AND e.lane = o.lane AND e.id < o.id
            AND e.delivered_at IS NULL AND e.abandoned_at IS NULL)
)
RETURNING *
