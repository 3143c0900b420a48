-- 0009: a standing rule binds every argument of the approved call except the ones that may vary
-- (the ceiling, and those the policy rule names), and covers at most max_uses calls
-- (PostgreSQL).
--
-- The grant stays immutable. Its uses are not a counter on it: each use is the proposal it
-- approved (proposals.standing_rule_id, frozen and never deleted), and the insert of a covered
-- proposal is refused once the rule has max_uses of them. The insert's trigger locks the grant's
-- row (FOR NO KEY UPDATE) before it counts, in a statement of its own, so concurrent uses of one
-- grant are counted one after the other: each sees the uses committed before it, never more
-- than max_uses are admitted.

-- arguments is json, not jsonb: it keeps the text as written, nested keys in their order, which
-- is what Python compares (contracts.standing.covers); the trigger below compares it as jsonb.
ALTER TABLE standing_rules
    ADD COLUMN arguments json
        CONSTRAINT standing_rules_arguments_are_an_object
        CHECK (arguments IS NULL OR json_typeof(arguments) = 'object'),
    ADD COLUMN varying text[] NOT NULL DEFAULT '{}',
    -- contracts.standing.MAX_USES; grants made before this migration cover DEFAULT_MAX_USES
    ADD COLUMN max_uses integer NOT NULL DEFAULT 10
        CONSTRAINT standing_rules_max_uses_in_range CHECK (max_uses BETWEEN 1 AND 1000);

-- Grants made before: they bind what their approved call had, but the ceiling.
ALTER TABLE standing_rules DISABLE TRIGGER standing_rules_only_revocation_changes;
UPDATE standing_rules AS s
SET arguments = (p.arguments::jsonb - s.ceiling_field)::json, varying = ARRAY[s.ceiling_field]
FROM proposals AS p WHERE p.id = s.created_from;
ALTER TABLE standing_rules ENABLE TRIGGER standing_rules_only_revocation_changes;

-- The grant is immutable, its new columns too: the only change ever allowed is one revocation.
CREATE OR REPLACE FUNCTION standing_rules_only_revocation_changes() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP <> 'UPDATE'
       OR (NEW.id, NEW.operation, NEW.agent, NEW.rule_id, NEW.ceiling_field, NEW.ceiling,
           NEW.created_by, NEW.created_from, NEW.created_at, NEW.expires_at, NEW.arguments::text,
           NEW.varying, NEW.max_uses)
          IS DISTINCT FROM
          (OLD.id, OLD.operation, OLD.agent, OLD.rule_id, OLD.ceiling_field, OLD.ceiling,
           OLD.created_by, OLD.created_from, OLD.created_at, OLD.expires_at, OLD.arguments::text,
           OLD.varying, OLD.max_uses)
       OR OLD.revoked_at IS NOT NULL OR NEW.revoked_at IS NULL
    THEN
        RAISE EXCEPTION 'standing_rules: a grant cannot be changed or deleted, only revoked once (%)',
            TG_OP USING ERRCODE = 'integrity_constraint_violation';
    END IF;
    RETURN NEW;
END;
$$;

-- A proposal approved by a standing rule is created auto-approved, and the rule must cover it:
-- same operation, agent and policy rule, not requested by the granter, unrevoked, unexpired at
-- creation, the ceiling argument a number at most the ceiling, every other argument that may not
-- vary equal to the bound one (no key missing or added), and uses left.
CREATE OR REPLACE FUNCTION proposals_standing_rule_covers() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.standing_rule_id IS NULL THEN
        RETURN NEW;
    END IF;
    -- One use of a grant at a time: wait for the other uses' transactions, then count in a new
    -- statement (READ COMMITTED: a new snapshot, which sees the uses committed meanwhile). The
    -- lock also keeps a revocation from committing between this check and the insert's commit.
    PERFORM 1 FROM standing_rules WHERE id = NEW.standing_rule_id FOR NO KEY UPDATE;
    IF NEW.decision <> 'auto' OR NEW.status <> 'executing' OR NOT EXISTS (
        SELECT 1 FROM standing_rules AS s
        WHERE s.id = NEW.standing_rule_id
          AND s.operation = NEW.operation AND s.agent = NEW.agent AND s.rule_id = NEW.rule_id
          AND s.created_by <> NEW.requested_by
          AND s.revoked_at IS NULL AND s.expires_at > NEW.created_at
          AND json_typeof(NEW.arguments -> s.ceiling_field) = 'number'
          AND (NEW.arguments ->> s.ceiling_field)::numeric <= s.ceiling
          AND s.arguments IS NOT NULL
          AND (NEW.arguments::jsonb - s.ceiling_field - s.varying) = s.arguments::jsonb
          AND (SELECT count(*) FROM proposals AS p WHERE p.standing_rule_id = s.id)
              < s.max_uses)
    THEN
        RAISE EXCEPTION 'proposals: the standing rule does not cover this proposal'
            USING ERRCODE = 'integrity_constraint_violation';
    END IF;
    RETURN NEW;
END;
$$;
