-- A new proposal stored with its audit entries and outbox entries on PostgreSQL
-- (store/proposals/submissions.py).

-- name: insert_submitted
-- A new proposal, its audit entries and the outbox entries of its first status, in one
-- statement committed on its own (one round trip), unless the agent already stored this
-- submission key (then that proposal comes back, ``created`` false, and nothing is written) or
-- the agent's pending proposals (the count the database keeps, migration 0016) with those of
-- :in_flight (its submissions in flight elsewhere, a JSON array of proposal ids) not stored yet
-- number :pending_limit or more (NULL: no bound; given only for a proposal that waits for a
-- person). One row always comes back: ``has_room``, ``created``, and the columns of the
-- proposal already stored under the key, all NULL when there is none (a new proposal is not
-- read back). Audit entries (:audit_entries, a JSON array of [actor, event, detail]) are
-- appended unsealed, for the sealer, in the order given (their ids order them in the chain);
-- outbox entries too (:effects, a JSON array of [effect, lane]; their ids order them within a
-- lane). A post is due at :post_due, every other effect at once. The lists are JSON, not
-- arrays: asyncpg encodes a text[] parameter element by element, at several times the cost.
-- The ids in flight are looked up one by one, by key (a scalar subquery is never made a join):
-- written NOT EXISTS, a plan made while the table was nearly empty, which a pooled connection
-- keeps, hashed every stored proposal to match them.
WITH existing AS (
    SELECT * FROM proposals WHERE agent = :agent AND submission_key = :submission_key
), room AS (
    SELECT :pending_limit::bigint IS NULL OR (
        SELECT coalesce(sum(pending), 0) FROM pending_counts WHERE agent = :agent
    ) + (
        SELECT count(*) FROM json_array_elements_text(:in_flight::json) AS other (id)
        WHERE (SELECT true FROM proposals WHERE proposals.id = other.id) IS NULL
    ) < :pending_limit::bigint AS has_room
), proposal AS (
    INSERT INTO proposals (
        id, agent, submission_key, submission_fingerprint, requested_by, run_id, operation,
        request, arguments, preview, binding_hash, agent_reason, callback_url, rule_id,
        decision, policy_note, approver_roles, channel, status, created_at, expires_at,
        updated_at, lease_until, risk, quorum, supersedes, edited_by, remind_at,
        standing_rule_id, review_sampled, delegation_id, shown_after, urgent, backup_roles,
        backup_at, batch_id
    )
    SELECT
        :id, :agent, :submission_key, :submission_fingerprint, :requested_by, :run_id,
        :operation, :request, :arguments, :preview, :binding_hash, :agent_reason, :callback_url,
        :rule_id, :decision, :policy_note, :approver_roles, :channel, :status, :created_at,
        :expires_at, :created_at, :lease_until, :risk, :quorum, :supersedes, :edited_by,
        :remind_at, :standing_rule_id, :review_sampled, :delegation_id, :shown_after, :urgent,
        :backup_roles, :backup_at, :batch_id
    WHERE NOT EXISTS (SELECT FROM existing) AND (SELECT has_room FROM room)
    ON CONFLICT (agent, submission_key) DO NOTHING
    RETURNING id, status, created_at
), entries AS (
    INSERT INTO audit_log (at, proposal_id, actor, event, detail)
    SELECT proposal.created_at, proposal.id, entry.item ->> 0, entry.item ->> 1, entry.item -> 2
    FROM proposal, json_array_elements(:audit_entries::json) WITH ORDINALITY AS entry (item, n)
    ORDER BY entry.n
), effects AS (
    INSERT INTO outbox (proposal_id, effect, lane, status, created_at, next_attempt_at)
    SELECT proposal.id, effect.item ->> 0, effect.item ->> 1, proposal.status,
        proposal.created_at,
        CASE WHEN effect.item ->> 0 = 'slack.post' THEN :post_due ELSE proposal.created_at END
    FROM proposal, json_array_elements(:effects::json) WITH ORDINALITY AS effect (item, n)
    ORDER BY effect.n
)
SELECT room.has_room, EXISTS (SELECT FROM proposal) AS created, existing.*
FROM room LEFT JOIN existing ON true

-- name: count_pending_with_in_flight
-- An agent's proposals waiting for a person, with those of :in_flight (its submissions in
-- flight elsewhere, by proposal id) not stored yet: what its pending limit is checked against.
-- Each id is looked up by key, as in insert_submitted.
SELECT (
    SELECT coalesce(sum(pending), 0) FROM pending_counts WHERE agent = :agent
) + (
    SELECT count(*) FROM unnest(:in_flight::text[]) AS other (id)
    WHERE (SELECT true FROM proposals WHERE proposals.id = other.id) IS NULL
) AS pending
