-- Batches (store/proposals/batches.py): proposals of one channel, rule, operation and approver set held
-- for up to their rule's window, then posted as one digest. The same SQL in both dialects.

-- name: close_lapsed_batches
-- The open batch of this key whose window has ended takes no one more (its digest is due).
UPDATE batches SET status = 'closed' WHERE key = :key AND status = 'open' AND closes_at <= :now

-- name: open_batch
-- A new batch for this key, unless one is open (batches_one_open_per_key).
INSERT INTO batches (id, key, channel, rule_id, opened_at, closes_at, max_size, size, status)
VALUES (:id, :key, :channel, :rule_id, :now, :closes_at, :max_size, 0, 'open')
ON CONFLICT (key) WHERE status = 'open' DO NOTHING

-- name: grow_batch
-- One more proposal joins the open batch of this key; the one that fills it closes it now.
-- No row back: no batch of this key is open (another proposal filled it meanwhile).
UPDATE batches
SET size = size + 1,
    status = CASE WHEN size + 1 >= max_size THEN 'closed' ELSE status END,
    closes_at = CASE WHEN size + 1 >= max_size THEN :now ELSE closes_at END
WHERE key = :key AND status = 'open' AND closes_at > :now
RETURNING *

-- name: bring_batch_forward
-- A batch filled up before its window ended: its proposals' posts are due now.
UPDATE outbox SET next_attempt_at = :now
WHERE effect = 'slack.post' AND delivered_at IS NULL AND abandoned_at IS NULL
  AND next_attempt_at > :now
  AND proposal_id IN (SELECT id FROM proposals WHERE batch_id = :batch_id)

-- name: select_batch
-- One batch.
SELECT * FROM batches WHERE id = :id

-- name: lease_batch
-- One worker at a time posts a closed batch's digest: the one that leases it. No row back:
-- another worker holds it, it is posted, or its window has not ended.
UPDATE batches
SET leased_until = :lease, status = CASE WHEN status = 'open' THEN 'closed' ELSE status END
WHERE id = :id AND status <> 'posted' AND closes_at <= :now
  AND (leased_until IS NULL OR leased_until <= :now)
RETURNING *

-- name: finish_batch
-- Its digest went out: nobody posts it again, unless a post of it is still to deliver (a failed
-- attempt to retry, a proposal that joined as it went out): then it is only released, and the
-- worker that leases it next posts the rest.
UPDATE batches
SET leased_until = NULL,
    status = CASE WHEN EXISTS (
        SELECT 1 FROM outbox AS o JOIN proposals AS p ON p.id = o.proposal_id
        WHERE p.batch_id = :id AND o.effect = 'slack.post'
          AND o.delivered_at IS NULL AND o.abandoned_at IS NULL
    ) THEN status ELSE 'posted' END
WHERE id = :id
