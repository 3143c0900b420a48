-- The sweeps over proposals on SQLite (store/proposals/verbs.py). The write transaction holds SQLite's
-- one write lock: nobody else changes these rows meanwhile.
--
-- How the sweeps here, reminders.sql and handovers.sql are planned: SQLite keeps no statistics
-- (the store never runs ANALYZE) and takes `status = ?` for the most selective term there is.
-- Left alone, the reminder and hand-over sweeps found their candidates by sorting every
-- pending proposal (through proposals_status_expires_at), and every sweep then walked every
-- pending proposal again to match the ids it had found: 19-63 ms a sweep with 55,000 pending.
-- So the candidates are read by the partial index that holds them in the sweep's order
-- (INDEXED BY, where SQLite would not choose it), and the compare-and-set of the UPDATE names
-- its status as `+status`, which no index serves: the ids found are looked up by key.

-- name: reclaim_abandoned
-- Executions whose executor did not record an outcome before its lease ran out (up to :limit,
-- oldest lease first) -> needs_reconciliation.
UPDATE proposals SET status = 'needs_reconciliation', outcome = :outcome, updated_at = :now
WHERE id IN (
    SELECT id FROM proposals INDEXED BY proposals_executing_lease
    WHERE status = 'executing' AND lease_until <= :now
    ORDER BY lease_until, id
    LIMIT :limit
) AND +status = 'executing'
RETURNING *

-- name: expire_due
-- The expiry sweep: up to :limit overdue pending proposals -> expired, oldest expiry first.
UPDATE proposals SET status = 'expired', updated_at = :now
WHERE id IN (
    SELECT id FROM proposals
    WHERE status = 'pending' AND expires_at <= :now
    ORDER BY expires_at, id
    LIMIT :limit
) AND +status = 'pending'
RETURNING *

-- name: record_outcome_at_once
-- Not run on SQLite: its writer seals each audit entry as it appends it (store/sqlite_tx.py),
-- so record_outcome appends its entry and outbox entries one by one in its transaction. SQLite
-- has no UPDATE or INSERT inside WITH; this fails naming the query, with PostgreSQL's
-- parameters.
SELECT record_outcome_at_once_is_not_run_on_sqlite(
    :status, :outcome, :now, :id, :attempt, :actor, :event, :detail, :effects
)

-- name: update_message_at_once
-- Not run on SQLite: its writer seals each audit entry as it appends it (store/sqlite_tx.py),
-- so attach_message appends its entry after update_message in its transaction. SQLite has no
-- UPDATE or INSERT inside WITH; this fails naming the query, with PostgreSQL's parameters.
SELECT update_message_at_once_is_not_run_on_sqlite(
    :channel, :ts, :now, :id, :actor, :event, :detail
)

-- name: select_pending
-- Pending proposals, riskiest first, then soonest expiry (App Home, the slash command); the
-- index proposals_pending_by_risk holds them in this order, and SQLite is told to read it:
-- left alone it sorted every pending proposal (29 ms with 55,000 pending; 1 ms by the index).
SELECT * FROM proposals INDEXED BY proposals_pending_by_risk WHERE status = 'pending'
ORDER BY risk_rank, expires_at, id LIMIT :limit
