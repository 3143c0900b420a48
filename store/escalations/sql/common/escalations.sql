-- Escalations and their outbox (store/escalations/verbs.py): the same SQL on both backends.
-- The re-announcement sweep and the outbox claim differ (FOR UPDATE SKIP LOCKED on
-- PostgreSQL): they are in store/escalations/sql/<dialect>/escalations.sql.

-- name: insert_escalation
-- A new escalation, open; no row back means the agent already used this submission key.
INSERT INTO escalations (
    id, agent, submission_key, submission_fingerprint, conversation_id, requested_by,
    customer_ref, team, summary, trigger, verdict, channel, callback_url, created_at, status,
    announced_at, updated_at
) VALUES (
    :id, :agent, :submission_key, :submission_fingerprint, :conversation_id, :requested_by,
    :customer_ref, :team, :summary, :trigger, :verdict, :channel, :callback_url, :created_at,
    'open', :created_at, :created_at
)
ON CONFLICT (agent, submission_key) DO NOTHING
RETURNING *

-- name: select_escalation
-- One escalation by id.
SELECT * FROM escalations WHERE id = :id

-- name: select_escalation_by_key
-- The escalation an agent made with one submission key.
SELECT * FROM escalations WHERE agent = :agent AND submission_key = :submission_key

-- name: attach_escalation_message
-- Remember the Slack message that shows the escalation.
UPDATE escalations SET slack_channel = :channel, slack_ts = :ts, updated_at = :now
WHERE id = :id
RETURNING *

-- name: take_escalation
-- open or handed_back -> taken by the clicker: one owner, however many click at once; when
-- they took it is kept with them (updated_at moves again when the message is posted again).
UPDATE escalations SET status = 'taken', owner = :actor, taken_at = :now, updated_at = :now
WHERE id = :id AND status IN ('open', 'handed_back')
RETURNING *

-- name: hand_back_escalation
-- taken by the clicker -> handed_back, with the note for the agent, naming the clicker;
-- nobody owns it now, so no taken_at.
UPDATE escalations
SET status = 'handed_back', owner = NULL, taken_at = NULL, note = :note,
    handed_back_by = :actor, handed_back_at = :now, updated_at = :now
WHERE id = :id AND status = 'taken' AND owner = :actor
RETURNING *

-- name: resolve_escalation
-- open, handed_back, or taken by the clicker -> resolved; nobody owns it now, so no taken_at.
UPDATE escalations
SET status = 'resolved', owner = NULL, taken_at = NULL, note = :note, resolved_by = :actor,
    resolved_at = :now, updated_at = :now
WHERE id = :id AND (status IN ('open', 'handed_back') OR (status = 'taken' AND owner = :actor))
RETURNING *

-- name: count_open_escalations
-- How many escalations of one agent nobody has taken yet (the per-agent limit).
SELECT count(*) AS open_count FROM escalations WHERE status = 'open' AND agent = :agent

-- name: select_escalations_owned_by
-- What one person has taken, oldest first: by when they took it (0031).
SELECT * FROM escalations WHERE status = 'taken' AND owner = :owner
ORDER BY taken_at, id
LIMIT :limit

-- name: select_escalation_log
-- An escalation's sealed audit entries (its id stands in the proposal_id column), in chain order.
SELECT * FROM audit_log WHERE proposal_id = :id AND seq IS NOT NULL ORDER BY seq

-- name: insert_escalation_outbox
-- One outbox entry of an escalation, due now.
INSERT INTO escalation_outbox (
    escalation_id, effect, lane, status, reannounce, created_at, next_attempt_at
) VALUES (:escalation_id, :effect, :lane, :status, :reannounce, :now, :now)

-- name: complete_escalation_delivery
-- The entry was delivered.
UPDATE escalation_outbox SET delivered_at = :now, leased_until = NULL WHERE id = :id

-- name: retry_escalation_delivery
-- The entry failed; try it again at :at.
UPDATE escalation_outbox SET next_attempt_at = :at, leased_until = NULL, last_error = :error
WHERE id = :id

-- name: abandon_escalation_delivery
-- The entry failed for good; what the audit entry of that needs comes back.
UPDATE escalation_outbox SET abandoned_at = :now, leased_until = NULL, last_error = :error
WHERE id = :id
RETURNING escalation_id, effect, attempts

-- name: count_pending_escalation_deliveries
-- How many outbox entries are neither delivered nor abandoned.
SELECT count(*) AS pending_count FROM escalation_outbox
WHERE delivered_at IS NULL AND abandoned_at IS NULL
