-- 0010: a standing rule binds every argument of the approved call except the ones that may vary
-- (the ceiling, and those the policy rule names), and covers at most max_uses calls.
--
-- The grant stays immutable. Its uses are not a counter on it: each use is the proposal it
-- approved (proposals.standing_rule_id, frozen and never deleted), and the insert of a covered
-- proposal is refused once the rule has max_uses of them. SQLite runs one writer at a time, so
-- the count in the trigger is exact even when calls arrive together.

ALTER TABLE standing_rules ADD COLUMN arguments TEXT
    CHECK (arguments IS NULL OR json_type(arguments) = 'object');  -- the bound arguments
ALTER TABLE standing_rules ADD COLUMN varying TEXT NOT NULL DEFAULT '[]'
    CHECK (json_type(varying) = 'array');  -- the argument names a covered call may change
-- contracts.standing.MAX_USES; grants made before this migration cover DEFAULT_MAX_USES calls
ALTER TABLE standing_rules ADD COLUMN max_uses INTEGER NOT NULL DEFAULT 10
    CHECK (max_uses BETWEEN 1 AND 1000);

-- Grants made before: they bind what their approved call had, but the ceiling. The immutability
-- trigger is recreated below to cover the new columns too.
DROP TRIGGER standing_rules_only_revocation_changes;

UPDATE standing_rules
SET arguments = (
        SELECT json_remove(p.arguments, '$."' || standing_rules.ceiling_field || '"')
        FROM proposals AS p WHERE p.id = standing_rules.created_from),
    varying = json_array(ceiling_field);

CREATE TRIGGER standing_rules_only_revocation_changes
BEFORE UPDATE ON standing_rules
WHEN NEW.id IS NOT OLD.id OR NEW.operation IS NOT OLD.operation OR NEW.agent IS NOT OLD.agent
  OR NEW.rule_id IS NOT OLD.rule_id OR NEW.ceiling_field IS NOT OLD.ceiling_field
  OR NEW.ceiling IS NOT OLD.ceiling OR NEW.created_by IS NOT OLD.created_by
  OR NEW.created_from IS NOT OLD.created_from OR NEW.created_at IS NOT OLD.created_at
  OR NEW.expires_at IS NOT OLD.expires_at OR NEW.arguments IS NOT OLD.arguments
  OR NEW.varying IS NOT OLD.varying OR NEW.max_uses IS NOT OLD.max_uses
  OR OLD.revoked_at IS NOT NULL OR NEW.revoked_at IS NULL
BEGIN
    SELECT RAISE(ABORT, 'standing_rules: a grant cannot be changed, only revoked once');
END;

-- A proposal approved by a standing rule is created auto-approved, and the rule must cover it:
-- same operation, agent and policy rule, not requested by the granter, unrevoked, unexpired at
-- creation, the ceiling argument a number at most the ceiling, every other argument that may not
-- vary equal to the bound one (same keys, same JSON types and values), and uses left.
DROP TRIGGER proposals_standing_rule_covers;

CREATE TRIGGER proposals_standing_rule_covers
BEFORE INSERT ON proposals
WHEN NEW.standing_rule_id IS NOT NULL AND (
    NEW.decision <> 'auto' OR NEW.status <> 'executing' OR NOT EXISTS (
        SELECT 1 FROM standing_rules AS s
        WHERE s.id = NEW.standing_rule_id
          AND s.operation = NEW.operation AND s.agent = NEW.agent AND s.rule_id = NEW.rule_id
          AND s.created_by <> NEW.requested_by
          AND s.revoked_at IS NULL AND s.expires_at > NEW.created_at
          AND json_type(NEW.arguments, '$."' || s.ceiling_field || '"') IN ('integer', 'real')
          AND json_extract(NEW.arguments, '$."' || s.ceiling_field || '"') <= s.ceiling
          AND s.arguments IS NOT NULL
          -- no argument that may not vary differs from the bound one, or is new
          AND NOT EXISTS (
              SELECT 1 FROM json_each(NEW.arguments) AS a
              WHERE a.key <> s.ceiling_field
                AND a.key NOT IN (SELECT v.value FROM json_each(s.varying) AS v)
                AND NOT EXISTS (
                    SELECT 1 FROM json_each(s.arguments) AS b
                    WHERE b.key = a.key AND b.type = a.type AND b.value IS a.value))
          -- and none of the bound arguments is missing
          AND NOT EXISTS (
              SELECT 1 FROM json_each(s.arguments) AS b
              WHERE NOT EXISTS (
                  SELECT 1 FROM json_each(NEW.arguments) AS a WHERE a.key = b.key))
          AND (SELECT count(*) FROM proposals AS p WHERE p.standing_rule_id = s.id)
              < s.max_uses))
BEGIN
    SELECT RAISE(ABORT, 'proposals: the standing rule does not cover this proposal');
END;
