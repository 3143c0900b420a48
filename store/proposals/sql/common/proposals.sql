-- Proposals and their transitions (store/proposals/verbs.py): the same SQL on SQLite and PostgreSQL.
-- Every transition is a compare-and-set: the UPDATE names the status it expects, and no row back
-- means another transaction got there first.

-- name: select_proposal
-- One proposal by id.
SELECT * FROM proposals WHERE id = :id

-- name: insert_proposal
-- A new proposal (updated_at starts at created_at); no row back means the agent already used
-- this submission key. Only its id and batch come back: the caller holds the rest
-- (store/proposals/rows.py, created_proposal), and reading back a row of some sixty columns
-- cost a submission on SQLite about a sixth of this statement's time.
INSERT INTO proposals (
    id, agent, submission_key, submission_fingerprint, requested_by, run_id, operation, request,
    arguments, preview, binding_hash, agent_reason, callback_url, rule_id, decision, policy_note,
    approver_roles, channel, status, created_at, expires_at, updated_at, lease_until, risk,
    quorum, supersedes, edited_by, remind_at, standing_rule_id, review_sampled, delegation_id,
    shown_after, urgent, backup_roles, backup_at, batch_id
) VALUES (
    :id, :agent, :submission_key, :submission_fingerprint, :requested_by, :run_id, :operation,
    :request, :arguments, :preview, :binding_hash, :agent_reason, :callback_url, :rule_id,
    :decision, :policy_note, :approver_roles, :channel, :status, :created_at, :expires_at,
    :created_at, :lease_until, :risk, :quorum, :supersedes, :edited_by, :remind_at,
    :standing_rule_id, :review_sampled, :delegation_id, :shown_after, :urgent, :backup_roles,
    :backup_at, :batch_id
)
ON CONFLICT (agent, submission_key) DO NOTHING
RETURNING id, batch_id

-- name: select_submission
-- The proposal an agent stored under a submission key.
SELECT * FROM proposals WHERE agent = :agent AND submission_key = :submission_key

-- name: select_pending_of_agent
-- One agent's pending proposals, in the same order.
SELECT * FROM proposals WHERE status = 'pending' AND agent = :agent
ORDER BY risk_rank, expires_at, id LIMIT :limit

-- name: count_pending
-- How many proposals of one agent wait for a decision (the per-agent pending limit): the
-- count the database keeps (migration 0016), a few rows whatever the backlog.
SELECT coalesce(sum(pending), 0) AS pending FROM pending_counts WHERE agent = :agent

-- name: count_pending_by_agent
-- Pending proposals per agent (App Home and /countersign list give each agent a share).
SELECT agent, sum(pending) AS pending FROM pending_counts GROUP BY agent HAVING sum(pending) > 0

-- name: select_decided_by
-- A person's decisions, latest first.
SELECT * FROM proposals WHERE decided_by = :user ORDER BY decided_at DESC, id LIMIT :limit

-- name: update_message
-- Remember the Slack message showing the proposal (allowed in any status); the first time
-- people were shown it (shown_at, 0032) stays when the message is placed again.
UPDATE proposals
SET slack_channel = :channel, slack_ts = :ts, updated_at = :now, shown_at = coalesce(shown_at, :now)
WHERE id = :id
RETURNING *

-- name: retry_execution
-- A person retries an uncertain execution: needs_reconciliation -> executing, with a new lease,
-- as the next attempt (an earlier attempt's late answer is then not this one's outcome), naming
-- the person (reconciled_by: an application of their recorded click knows it as its own).
UPDATE proposals
SET status = 'executing', updated_at = :now, lease_until = :lease_until, attempt = attempt + 1,
    reconciled_by = :actor, reconciled_at = :now
WHERE id = :id AND status = 'needs_reconciliation'
RETURNING *

-- name: resolve_reconciliation
-- A person records what really happened: needs_reconciliation -> succeeded or failed, naming
-- the person (reconciled_by, as a retry does).
UPDATE proposals
SET status = :status, outcome = :outcome, updated_at = :now, reconciled_by = :actor,
    reconciled_at = :now
WHERE id = :id AND status = 'needs_reconciliation'
RETURNING *

-- name: reject
-- The rejection: pending and unexpired -> rejected, with the reason.
UPDATE proposals
SET status = 'rejected', decided_by = :actor, decided_at = :now, decision_note = :reason,
    updated_at = :now
WHERE id = :id AND status = 'pending' AND (expires_at IS NULL OR expires_at > :now)
RETURNING *

-- name: supersede
-- An edit replaces a pending, unexpired proposal: pending -> superseded, naming the edit (not
-- yet inserted; the same transaction inserts it) and the editor.
UPDATE proposals
SET status = 'superseded', superseded_by = :new_id, decided_by = :actor, decided_at = :now,
    updated_at = :now
WHERE id = :id AND status = 'pending' AND (expires_at IS NULL OR expires_at > :now)
RETURNING *

-- name: record_outcome
-- The outcome of an execution: executing -> the outcome's status, only for the attempt that is
-- running (:attempt): an earlier attempt's answer is not the outcome of a retry.
UPDATE proposals SET status = :status, outcome = :outcome, updated_at = :now
WHERE id = :id AND status = 'executing' AND attempt = :attempt
RETURNING *

-- name: select_late_answers
-- The late answers audited for one proposal, sealed or not yet (a late answer is audited once).
SELECT detail FROM audit_log WHERE proposal_id = :proposal_id AND event = 'late_outcome'

-- name: record_late_outcome
-- The target answered after the execution was handed to a person: the outcome they see says
-- so. The status stays needs_reconciliation; only a person records what happened. Only over
-- the attempt and the outcome the new one was built from (:read, the stored text as read: a
-- json column keeps the text it was given), so another late answer or a retry's outcome
-- written since is never overwritten.
UPDATE proposals SET outcome = :outcome
WHERE id = :id AND status = 'needs_reconciliation' AND attempt = :attempt
  AND CAST(outcome AS TEXT) = :read
RETURNING *
