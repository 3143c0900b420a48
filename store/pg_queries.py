"""The PostgreSQL store's queries, each named and commented (positional parameters, $1...).

Every transition is a compare-and-set: the UPDATE names the status it expects, and no row back
means another transaction got there first. Sweeps take their rows with ``FOR UPDATE SKIP
LOCKED``, so instances sweeping at once share the work instead of repeating or awaiting it.
"""

from __future__ import annotations

__all__ = [
    "ABANDON_DELIVERY",
    "CLAIM_DELIVERIES",
    "COMPLETE_DELIVERY",
    "COUNT_PENDING",
    "COUNT_PENDING_BY_AGENT",
    "COUNT_PENDING_DELIVERIES",
    "EXPIRE_DUE",
    "INSERT_AUDIT_ENTRY",
    "INSERT_OUTBOX",
    "INSERT_PROPOSAL",
    "LOCK_AUDIT_HEAD",
    "RECLAIM_ABANDONED",
    "RECORD_OUTCOME",
    "REJECT",
    "RESOLVE",
    "RETRY",
    "RETRY_DELIVERY",
    "SELECT_AUDIT_HEAD",
    "SELECT_AUDIT_LOG",
    "SELECT_BY_SUBMISSION_KEY",
    "SELECT_DECIDED_BY",
    "SELECT_PENDING",
    "SELECT_PENDING_OF_AGENT",
    "SELECT_PROPOSAL",
    "SELECT_PROPOSAL_AUDIT_LOG",
    "SUPERSEDE",
    "UPDATE_MESSAGE",
]

#: A new proposal; no row back means the agent already used this submission key.
INSERT_PROPOSAL = """
INSERT INTO proposals (
    id, agent, submission_key, submission_fingerprint, requested_by, run_id, operation, request,
    arguments, preview, binding_hash, agent_reason, callback_url, rule_id, decision, policy_note,
    approver_roles, channel, status, created_at, expires_at, updated_at, lease_until, risk,
    quorum, supersedes, edited_by, remind_at, standing_rule_id, review_sampled, delegation_id
) VALUES (
    $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20,
    $21, $22, $23, $24, $25, $26, $27, $28, $29, $30, $31
)
ON CONFLICT (agent, submission_key) DO NOTHING
RETURNING *
"""

#: The proposal an agent stored under a submission key.
SELECT_BY_SUBMISSION_KEY = "SELECT * FROM proposals WHERE agent = $1 AND submission_key = $2"

#: Pending proposals, riskiest first, then soonest expiry (App Home, the slash command); the
#: index proposals_pending_by_risk holds them in this order.
SELECT_PENDING = """
SELECT * FROM proposals WHERE status = 'pending' ORDER BY risk_rank, expires_at, id LIMIT $1
"""

#: One agent's pending proposals, in the same order.
SELECT_PENDING_OF_AGENT = """
SELECT * FROM proposals WHERE status = 'pending' AND agent = $1
ORDER BY risk_rank, expires_at, id LIMIT $2
"""

#: How many proposals of one agent wait for a decision (the per-agent pending limit).
COUNT_PENDING = "SELECT count(*) FROM proposals WHERE status = 'pending' AND agent = $1"

#: Pending proposals per agent (App Home and /countersign list give each agent a share).
COUNT_PENDING_BY_AGENT = """
SELECT agent, count(*) AS pending FROM proposals WHERE status = 'pending' GROUP BY agent
"""

#: A person's decisions, latest first.
SELECT_DECIDED_BY = """
SELECT * FROM proposals WHERE decided_by = $1 ORDER BY decided_at DESC, id LIMIT $2
"""

#: One proposal by id.
SELECT_PROPOSAL = "SELECT * FROM proposals WHERE id = $1"

#: Remember the Slack message showing the proposal (allowed in any status).
UPDATE_MESSAGE = """
UPDATE proposals SET slack_channel = $2, slack_ts = $3, updated_at = $4 WHERE id = $1
RETURNING *
"""

#: A person retries an uncertain execution: needs_reconciliation -> executing, with a new lease.
RETRY = """
UPDATE proposals SET status = 'executing', updated_at = $2, lease_until = $3
WHERE id = $1 AND status = 'needs_reconciliation'
RETURNING *
"""

#: A person records what really happened: needs_reconciliation -> succeeded or failed.
RESOLVE = """
UPDATE proposals SET status = $2, outcome = $3, updated_at = $4
WHERE id = $1 AND status = 'needs_reconciliation'
RETURNING *
"""

#: Executions whose executor did not record an outcome in time -> needs_reconciliation.
#: Rows another transaction holds (an outcome being recorded, another instance's sweep) are
#: skipped, not awaited.
RECLAIM_ABANDONED = """
WITH abandoned AS (
    SELECT id FROM proposals
    WHERE status = 'executing' AND lease_until <= $1
    ORDER BY lease_until, id
    LIMIT $2
    FOR UPDATE SKIP LOCKED
)
UPDATE proposals AS p SET status = 'needs_reconciliation', outcome = $3, updated_at = $1
FROM abandoned
WHERE p.id = abandoned.id AND p.status = 'executing'
RETURNING p.*
"""

#: The rejection: pending and unexpired -> rejected, with the reason.
REJECT = """
UPDATE proposals
SET status = 'rejected', decided_by = $2, decided_at = $3, decision_note = $4, updated_at = $3
WHERE id = $1 AND status = 'pending' AND (expires_at IS NULL OR expires_at > $3)
RETURNING *
"""

#: An edit replaces a pending, unexpired proposal: pending -> superseded, naming the edit (not
#: yet inserted; the same transaction inserts it) and the editor.
SUPERSEDE = """
UPDATE proposals
SET status = 'superseded', superseded_by = $2, decided_by = $3, decided_at = $4, updated_at = $4
WHERE id = $1 AND status = 'pending' AND (expires_at IS NULL OR expires_at > $4)
RETURNING *
"""

#: The outcome of an execution: executing -> the outcome's status.
RECORD_OUTCOME = """
UPDATE proposals SET status = $2, outcome = $3, updated_at = $4
WHERE id = $1 AND status = 'executing'
RETURNING *
"""

#: The expiry sweep: up to ``limit`` overdue pending proposals -> expired, oldest expiry first.
#: Rows another transaction holds (a claim, another instance's sweep) are skipped, not awaited.
EXPIRE_DUE = """
WITH due AS (
    SELECT id FROM proposals
    WHERE status = 'pending' AND expires_at <= $1
    ORDER BY expires_at, id
    LIMIT $2
    FOR UPDATE SKIP LOCKED
)
UPDATE proposals AS p SET status = 'expired', updated_at = $1
FROM due
WHERE p.id = due.id AND p.status = 'pending'
RETURNING p.*
"""

#: The last entry of the audit chain, locked until the transaction ends: appends queue here.
LOCK_AUDIT_HEAD = "SELECT seq, hash FROM audit_head WHERE id = 1 FOR UPDATE"

#: The last entry of the audit chain, read only.
SELECT_AUDIT_HEAD = "SELECT seq, hash FROM audit_head WHERE id = 1"

#: Append one audit entry; a trigger checks it follows the head and moves the head.
INSERT_AUDIT_ENTRY = """
INSERT INTO audit_log (seq, at, proposal_id, actor, event, detail, prev_hash, hash)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
RETURNING *
"""

#: One effect of a transition, to be delivered by the outbox worker.
INSERT_OUTBOX = """
INSERT INTO outbox (proposal_id, effect, lane, status, created_at, next_attempt_at)
VALUES ($1, $2, $3, $4, $5, $5)
"""

#: Lease up to $3 due entries, each the first undelivered one of its proposal and lane. Entries
#: another worker is leasing right now are skipped; the outer WHERE re-checks each locked row.
CLAIM_DELIVERIES = """
WITH due AS (
    SELECT o.id FROM outbox AS o
    WHERE o.delivered_at IS NULL AND o.abandoned_at IS NULL
      AND o.next_attempt_at <= $1
      AND (o.leased_until IS NULL OR o.leased_until <= $1)
      AND NOT EXISTS (
          SELECT 1 FROM outbox AS e
          WHERE e.proposal_id = o.proposal_id AND e.lane = o.lane AND e.id < o.id
            AND e.delivered_at IS NULL AND e.abandoned_at IS NULL)
    ORDER BY o.next_attempt_at, o.id
    LIMIT $3
    FOR UPDATE SKIP LOCKED
)
UPDATE outbox AS o SET leased_until = $2, attempts = o.attempts + 1
FROM due
WHERE o.id = due.id AND o.delivered_at IS NULL AND o.abandoned_at IS NULL
  AND (o.leased_until IS NULL OR o.leased_until <= $1)
RETURNING o.*
"""

#: Delivered.
COMPLETE_DELIVERY = "UPDATE outbox SET delivered_at = $2, leased_until = NULL WHERE id = $1"

#: Not delivered this time: release the lease and say when to try again.
RETRY_DELIVERY = """
UPDATE outbox SET next_attempt_at = $2, leased_until = NULL, last_error = $3 WHERE id = $1
"""

#: Given up.
ABANDON_DELIVERY = """
UPDATE outbox SET abandoned_at = $2, leased_until = NULL, last_error = $3 WHERE id = $1
RETURNING proposal_id, effect, attempts
"""

#: Entries still to deliver.
COUNT_PENDING_DELIVERIES = (
    "SELECT count(*) FROM outbox WHERE delivered_at IS NULL AND abandoned_at IS NULL"
)

#: The whole audit log in chain order.
SELECT_AUDIT_LOG = "SELECT * FROM audit_log ORDER BY seq"

#: One proposal's audit entries in chain order.
SELECT_PROPOSAL_AUDIT_LOG = "SELECT * FROM audit_log WHERE proposal_id = $1 ORDER BY seq"
