-- The sweeps over proposals on PostgreSQL (store/proposals/verbs.py). Rows another transaction holds
-- (a decision, an outcome being recorded, another instance's sweep) are skipped, not awaited; the
-- outer WHERE re-checks each locked row.

-- name: reclaim_abandoned
-- Executions whose executor did not record an outcome before its lease ran out (up to :limit,
-- oldest lease first) -> needs_reconciliation.
WITH abandoned AS (
    SELECT id FROM proposals
    WHERE status = 'executing' AND lease_until <= :now
    ORDER BY lease_until, id
    LIMIT :limit
    FOR UPDATE SKIP LOCKED
)
UPDATE proposals AS p SET status = 'needs_reconciliation', outcome = :outcome, updated_at = :now
FROM abandoned
WHERE p.id = abandoned.id AND p.status = 'executing'
RETURNING p.*

-- name: expire_due
-- The expiry sweep: up to :limit overdue pending proposals -> expired, oldest expiry first. The
-- locked rows are updated by their address (joined by id, the plan a pooled connection made
-- while the table was empty walked every pending proposal: 2,009 read to expire 3 of 2,003).
WITH due AS (
    SELECT ctid AS address FROM proposals
    WHERE status = 'pending' AND expires_at <= :now
    ORDER BY expires_at, id
    LIMIT :limit
    FOR UPDATE SKIP LOCKED
)
UPDATE proposals AS p SET status = 'expired', updated_at = :now
FROM due
WHERE p.ctid = due.address AND p.status = 'pending'
RETURNING p.*

-- name: record_outcome_at_once
-- record_outcome with its audit entry (appended unsealed, for the sealer) and the outbox
-- entries of the status it enters, in one statement committed on its own (one round trip); no
-- row back: not executing :attempt, nothing written. :effects (a JSON array of [effect, lane])
-- are that status's effects (lifecycle.EFFECTS) and their lanes: a Slack one is written when
-- the proposal asks in a channel, a callback when it has a callback_url
-- (store/proposals/effects.py), in that order; a message update written makes the proposal's
-- earlier ones not under way moot (supersede_updates).
WITH changed AS (
    UPDATE proposals SET status = :status, outcome = :outcome, updated_at = :now
    WHERE id = :id AND status = 'executing' AND attempt = :attempt
    RETURNING *
), entry AS (
    INSERT INTO audit_log (at, proposal_id, actor, event, detail)
    SELECT :now, changed.id, :actor, :event, :detail::json FROM changed
), effect AS (
    SELECT e.item ->> 0 AS effect, e.item ->> 1 AS lane, e.n
    FROM changed, json_array_elements(:effects::json) WITH ORDINALITY AS e (item, n)
    WHERE (e.item ->> 1 = 'slack' AND changed.channel IS NOT NULL)
       OR (e.item ->> 1 = 'callback' AND changed.callback_url IS NOT NULL)
), superseded AS (
    -- the proposal's own open Slack entries first (outbox_open_by_proposal), then by id those
    -- that are message updates: with the effect in the same condition, or joined with changed,
    -- the planner walked every open message update of the outbox (outbox_due_decisions) on
    -- tables not analyzed yet, as a fresh database's are
    UPDATE outbox SET delivered_at = :now, last_error = 'superseded by a later update'
    WHERE outbox.id IN (
        SELECT own.id FROM outbox AS own
        WHERE own.proposal_id = :id AND own.lane = 'slack'
          AND own.delivered_at IS NULL AND own.abandoned_at IS NULL
    )
      AND outbox.effect = 'slack.update'
      AND EXISTS (SELECT FROM effect WHERE effect.effect = 'slack.update')
      AND (outbox.leased_until IS NULL OR outbox.leased_until <= :now)
), enqueued AS (
    INSERT INTO outbox (proposal_id, effect, lane, status, created_at, next_attempt_at)
    SELECT changed.id, effect.effect, effect.lane, changed.status, :now, :now
    FROM changed, effect
    ORDER BY effect.n
)
SELECT * FROM changed

-- name: update_message_at_once
-- update_message with its audit entry (appended unsealed, for the sealer), in one statement
-- committed on its own (one round trip); no row back: no such proposal, nothing written.
WITH changed AS (
    UPDATE proposals
    SET slack_channel = :channel, slack_ts = :ts, updated_at = :now,
        shown_at = coalesce(shown_at, :now)
    WHERE id = :id
    RETURNING *
), entry AS (
    INSERT INTO audit_log (at, proposal_id, actor, event, detail)
    SELECT :now, changed.id, :actor, :event, :detail::json FROM changed
)
SELECT * FROM changed

-- name: select_pending
-- Pending proposals, riskiest first, then soonest expiry (App Home, the slash command); the
-- index proposals_pending_by_risk holds them in this order.
SELECT * FROM proposals WHERE status = 'pending' ORDER BY risk_rank, expires_at, id LIMIT :limit
