-- Standing rules and reviews of sampled automatic approvals (store/standing/verbs.py): the same
-- SQL on SQLite and PostgreSQL.

-- name: claim_for_grant
-- The approval that grants a standing rule: the claim (pending, unexpired, bound to the contract
-- the approver saw), for a proposal that needs one approval only.
UPDATE proposals
SET status = 'executing', decided_by = :actor, decided_at = :now, updated_at = :now,
    lease_until = :lease_until
WHERE id = :id AND status = 'pending' AND (expires_at IS NULL OR expires_at > :now)
  AND binding_hash = :binding_hash AND quorum = 1
RETURNING *

-- name: insert_granter_approval
-- The granter's approval, as every approval is recorded.
INSERT INTO approvals (proposal_id, approver, binding_hash, approved_at)
VALUES (:proposal_id, :approver, :binding_hash, :approved_at)

-- name: insert_standing_rule
-- The grant, written in the approval's transaction.
INSERT INTO standing_rules (
    id, operation, agent, rule_id, ceiling_field, ceiling, created_by, created_from, created_at,
    expires_at, arguments, varying, max_uses
) VALUES (
    :id, :operation, :agent, :rule_id, :ceiling_field, :ceiling, :created_by, :created_from,
    :created_at, :expires_at, :arguments, :varying, :max_uses
)

-- name: select_standing_rule
-- One standing rule by id, with the number of proposals it approved.
SELECT s.*, (SELECT count(*) FROM proposals AS p WHERE p.standing_rule_id = s.id) AS uses
FROM standing_rules AS s
WHERE s.id = :id

-- name: select_active_standing_rules
-- Every unrevoked, unexpired rule (used up or not), soonest expiry first, with its uses.
SELECT s.*, (SELECT count(*) FROM proposals AS p WHERE p.standing_rule_id = s.id) AS uses
FROM standing_rules AS s
WHERE s.revoked_at IS NULL AND s.expires_at > :now
ORDER BY s.expires_at, s.id
LIMIT :limit

-- name: revoke_standing_rule
-- The revocation: active -> revoked, once.
UPDATE standing_rules SET revoked_by = :actor, revoked_at = :now
WHERE id = :id AND revoked_at IS NULL AND expires_at > :now
RETURNING id

-- name: select_review_sample
-- Whether a proposal exists, and was sampled for review.
SELECT review_sampled FROM proposals WHERE id = :id

-- name: insert_review
-- One verdict per proposal: no row back means someone gave one first.
INSERT INTO reviews (proposal_id, verdict, reviewer, at)
VALUES (:proposal_id, :verdict, :reviewer, :at)
ON CONFLICT (proposal_id) DO NOTHING
RETURNING *

-- name: select_review
-- The verdict on one proposal.
SELECT * FROM reviews WHERE proposal_id = :proposal_id

-- name: select_rule_history
-- What people decided on the latest :most proposals of one agent that one policy rule asked a
-- person about (decision 'ask'), created at or after :since: approved (the claim moved it on from
-- pending, to executing and onward; a standing rule's calls are 'auto' and never counted),
-- rejected, or left to expire; `counted` is how many were read (pending, superseded and
-- cancelled ones among them, in none of the three). "Latest" is by created_at, as the window
-- is, not by the order they were stored in (a clock set back stores later calls as older).
-- The partial index proposals_asked_by_rule (0026) holds them in that order: the read walks
-- them newest first and stops at :most or at :since, however many the agent has stored (it
-- read and sorted every proposal of the agent: 1.07 s with 1,000,000 on SQLite).
SELECT count(CASE WHEN status IN ('executing', 'succeeded', 'failed', 'revision_required',
                                  'needs_reconciliation')
                   AND standing_rule_id IS NULL THEN 1 END) AS approved,
       count(CASE WHEN status = 'rejected' THEN 1 END) AS rejected,
       count(CASE WHEN status = 'expired' THEN 1 END) AS expired,
       count(*) AS counted
FROM (
    SELECT status, standing_rule_id FROM proposals
    WHERE agent = :agent AND rule_id = :rule_id AND decision = 'ask' AND created_at >= :since
    ORDER BY created_at DESC
    LIMIT :most
) AS latest
