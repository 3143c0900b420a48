-- The outbox of proposals' effects (store/proposals/outbox.py): the same SQL on SQLite and PostgreSQL.

-- name: insert_outbox
-- One effect of a change, for the outbox worker to deliver; due at :due (now, or for the post of
-- a proposal waiting in a batch, when the batch closes).
INSERT INTO outbox (proposal_id, effect, lane, status, created_at, next_attempt_at)
VALUES (:proposal_id, :effect, :lane, :status, :now, :due)

-- name: complete_delivery
-- Delivered.
UPDATE outbox SET delivered_at = :now, leased_until = NULL WHERE id = :id

-- name: retry_delivery
-- Not delivered this time: release the lease and say when to try again.
UPDATE outbox SET next_attempt_at = :at, leased_until = NULL, last_error = :error WHERE id = :id

-- name: abandon_delivery
-- Given up: later entries of its proposal and lane may proceed.
UPDATE outbox SET abandoned_at = :now, leased_until = NULL, last_error = :error WHERE id = :id
RETURNING proposal_id, effect, attempts

-- name: count_pending_deliveries
-- Entries still to deliver.
SELECT count(*) AS pending FROM outbox WHERE delivered_at IS NULL AND abandoned_at IS NULL

-- name: supersede_updates
-- A new message update makes the proposal's earlier ones moot: an update renders the state
-- when it is delivered, so the last one shows what the earlier would have. Those not being
-- delivered right now count as done; one under a live lease is left to finish first. The
-- proposal's own open entries are found first (outbox_open_by_proposal): with the effect in the
-- same condition, PostgreSQL walked every open message update (outbox_due_decisions) on tables
-- not analyzed yet, as a fresh database's are.
UPDATE outbox SET delivered_at = :now, last_error = 'superseded by a later update'
WHERE id IN (
    SELECT own.id FROM outbox AS own
    WHERE own.proposal_id = :proposal_id AND own.lane = :lane
      AND own.delivered_at IS NULL AND own.abandoned_at IS NULL
)
  AND effect = :effect
  AND (leased_until IS NULL OR leased_until <= :now)
