-- Batches (store/proposals/batches.py): what PostgreSQL writes its own way (a list of ids is an array).

-- name: claim_batch_posts
-- Every due post of the batch's proposals but those the caller holds, leased to the worker that
-- leased the batch (lease_batch): it alone posts them, so their own leases do not stop it (a
-- post another worker is leasing right now is waited for, then checked again as it now is;
-- changed meanwhile, its new version is not in this statement's snapshot, so it is left to
-- that lease and claimed again once the lease runs out: tests/store/test_postgres_races.py).
-- Written so that only the cheap plan exists, whatever the planner's statistics (as
-- claim_deliveries is, store/proposals/sql/postgres/outbox.sql): the batch's proposals are
-- walked by their index, each one's post looked up by outbox_open_by_proposal, "first of its
-- lane" is one lookup of the lane's lowest open id, and the locked rows are updated by their
-- row address. Joined with the proposals and written NOT EXISTS, the plan made while the
-- outbox was empty (a new database's, which a pooled connection keeps) walked every open
-- entry, and again for each post: 6,015 entries read to lease 3 posts beside 1,500 others.
WITH posts AS (
    SELECT o.address FROM proposals AS p
    CROSS JOIN LATERAL (
        SELECT o.ctid AS address FROM outbox AS o
        WHERE o.proposal_id = p.id AND o.effect = 'slack.post'
          AND o.delivered_at IS NULL AND o.abandoned_at IS NULL AND o.next_attempt_at <= :now
          AND NOT (o.id = ANY(:held::text[]::bigint[]))
          AND o.id = (
              SELECT min(e.id) FROM outbox AS e
              WHERE e.proposal_id = o.proposal_id AND e.lane = o.lane
                AND e.delivered_at IS NULL AND e.abandoned_at IS NULL)
        FOR UPDATE
    ) AS o
    WHERE p.batch_id = :batch_id
)
UPDATE outbox AS o SET leased_until = :lease, attempts = o.attempts + 1
FROM posts
WHERE o.ctid = posts.address
RETURNING o.*
