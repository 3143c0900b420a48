-- A new proposal stored with its audit entries and outbox entries on PostgreSQL
-- (store/proposals/submissions.py).

-- name: insert_submitted
-- A new proposal, its audit entries and the outbox entries of its first status, in one
-- statement committed on its own (one round trip). The entries are written only with the
-- proposal: no row back means the agent already used this submission key, and nothing was
-- written. Audit entries are appended unsealed, for the sealer, in the order given (their ids
-- order them in the chain); outbox entries too (their ids order them within a lane). A post is
-- due at :post_due, every other effect at once.
WITH proposal AS (
    INSERT INTO proposals (
        id, agent, submission_key, submission_fingerprint, requested_by, run_id, operation,
        request, arguments, preview, binding_hash, agent_reason, callback_url, rule_id,
        decision, policy_note, approver_roles, channel, status, created_at, expires_at,
        updated_at, lease_until, risk, quorum, supersedes, edited_by, remind_at,
        standing_rule_id, review_sampled, delegation_id, shown_after, urgent, backup_roles,
        backup_at, batch_id
    ) VALUES (
        :id, :agent, :submission_key, :submission_fingerprint, :requested_by, :run_id,
        :operation, :request, :arguments, :preview, :binding_hash, :agent_reason, :callback_url,
        :rule_id, :decision, :policy_note, :approver_roles, :channel, :status, :created_at,
        :expires_at, :created_at, :lease_until, :risk, :quorum, :supersedes, :edited_by,
        :remind_at, :standing_rule_id, :review_sampled, :delegation_id, :shown_after, :urgent,
        :backup_roles, :backup_at, :batch_id
    )
    ON CONFLICT (agent, submission_key) DO NOTHING
    RETURNING *
), entries AS (
    INSERT INTO audit_log (at, proposal_id, actor, event, detail)
    SELECT proposal.created_at, proposal.id, entry.actor, entry.event, entry.detail::json
    FROM proposal,
        unnest(:audit_actors::text[], :audit_events::text[], :audit_details::text[])
            WITH ORDINALITY AS entry (actor, event, detail, n)
    ORDER BY entry.n
), effects AS (
    INSERT INTO outbox (proposal_id, effect, lane, status, created_at, next_attempt_at)
    SELECT proposal.id, effect.effect, effect.lane, proposal.status, proposal.created_at,
        CASE WHEN effect.effect = 'slack.post' THEN :post_due ELSE proposal.created_at END
    FROM proposal,
        unnest(:effects::text[], :lanes::text[]) WITH ORDINALITY AS effect (effect, lane, n)
    ORDER BY effect.n
)
SELECT * FROM proposal
