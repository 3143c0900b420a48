-- Standing rules and reviews (store/standing/verbs.py): what SQLite writes its own way.

-- name: select_covering_standing_rules
-- The active rules that may cover a call: operation, agent, policy rule, ceiling, not the
-- granter's own request, uses left (the partial index standing_rules_active finds the
-- candidates), binding the call's arguments but the varying ones, as the insert's trigger
-- checks: every argument of the call but the ceiling and the varying ones is bound with the same
-- JSON type and value, and every bound argument is in the call.
SELECT s.*, (SELECT count(*) FROM proposals AS p WHERE p.standing_rule_id = s.id) AS uses
FROM standing_rules AS s
WHERE s.operation = :operation AND s.agent = :agent AND s.revoked_at IS NULL
  AND s.expires_at > :now AND s.rule_id = :rule_id AND s.ceiling >= :value
  AND s.created_by <> :requested_by AND s.arguments IS NOT NULL
  AND (SELECT count(*) FROM proposals AS p WHERE p.standing_rule_id = s.id) < s.max_uses
  AND NOT EXISTS (
      SELECT 1 FROM json_each(:arguments) AS a
      WHERE a.key <> s.ceiling_field
        AND a.key NOT IN (SELECT v.value FROM json_each(s.varying) AS v)
        AND NOT EXISTS (
            SELECT 1 FROM json_each(s.arguments) AS b
            WHERE b.key = a.key AND b.type = a.type AND b.value IS a.value))
  AND NOT EXISTS (
      SELECT 1 FROM json_each(s.arguments) AS b
      WHERE NOT EXISTS (SELECT 1 FROM json_each(:arguments) AS a WHERE a.key = b.key))
ORDER BY s.expires_at DESC, s.id
LIMIT 10

-- name: select_review_stats
-- Sampled automatic approvals per policy rule and standing rule, with their verdicts (the
-- partial index proposals_review_sampled holds the sampled ones: review_sampled = 1).
SELECT p.rule_id, p.standing_rule_id, count(*) AS sampled, count(r.proposal_id) AS reviewed,
       coalesce(sum(r.verdict = 'should_have_asked'), 0) AS flagged
FROM proposals AS p LEFT JOIN reviews AS r ON r.proposal_id = p.id
WHERE p.review_sampled = 1
GROUP BY p.rule_id, p.standing_rule_id
