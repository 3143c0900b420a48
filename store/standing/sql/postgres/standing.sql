-- Standing rules and reviews (store/standing/verbs.py): what PostgreSQL writes its own way.

-- name: select_covering_standing_rules
-- The active rules that may cover a call: operation, agent, policy rule, ceiling, not the
-- granter's own request, uses left (the partial index standing_rules_active finds the
-- candidates), binding the call's arguments but the varying ones (compared as jsonb), as the
-- insert's trigger checks.
SELECT s.*, (SELECT count(*) FROM proposals AS p WHERE p.standing_rule_id = s.id) AS uses
FROM standing_rules AS s
WHERE s.operation = :operation AND s.agent = :agent AND s.revoked_at IS NULL
  AND s.expires_at > :now AND s.rule_id = :rule_id AND s.ceiling >= :value
  AND s.created_by <> :requested_by AND s.arguments IS NOT NULL
  AND (SELECT count(*) FROM proposals AS p WHERE p.standing_rule_id = s.id) < s.max_uses
  AND (:arguments::jsonb - s.ceiling_field - s.varying) = s.arguments::jsonb
ORDER BY s.expires_at DESC, s.id
LIMIT 10

-- name: select_review_stats
-- Sampled automatic approvals per policy rule and standing rule, with their verdicts (the
-- partial index proposals_review_sampled holds the sampled ones).
SELECT p.rule_id, p.standing_rule_id, count(*) AS sampled, count(r.proposal_id) AS reviewed,
       count(*) FILTER (WHERE r.verdict = 'should_have_asked') AS flagged
FROM proposals AS p LEFT JOIN reviews AS r ON r.proposal_id = p.id
WHERE p.review_sampled
GROUP BY p.rule_id, p.standing_rule_id
