-- 0006: standing rules ("approve, and allow similar for a while"), the reviews of sampled
-- automatic approvals, and which standing rule approved a proposal (PostgreSQL).
--
-- A standing rule is granted once and never edited: only its revocation (who, when) may be
-- written, once. Reviews are append-only, one per proposal. The database also refuses a
-- proposal that claims a standing rule not covering it (contracts/standing.py says the same in
-- Python), and a review of a proposal that was not sampled for review.


CREATE TABLE standing_rules (
    id             text PRIMARY KEY,
    operation      text NOT NULL,
    agent          text NOT NULL,
    rule_id        text NOT NULL,          -- the ask rule whose calls it approves
    ceiling_field  text NOT NULL,          -- the numeric argument it bounds
    ceiling        numeric NOT NULL,
    created_by     text NOT NULL,          -- the admin who granted it
    -- the proposal whose approval granted it: one standing rule per approval at most
    created_from   text NOT NULL UNIQUE REFERENCES proposals (id),
    created_at     timestamptz NOT NULL,
    expires_at     timestamptz NOT NULL,
    revoked_by     text,
    revoked_at     timestamptz,
    CONSTRAINT standing_rules_expire_after_creation CHECK (expires_at > created_at),
    -- contracts.standing.MAX_STANDING
    CONSTRAINT standing_rules_last_at_most_30_days
        CHECK (expires_at <= created_at + interval '30 days'),
    CONSTRAINT standing_rules_revocation_is_complete
        CHECK ((revoked_by IS NULL) = (revoked_at IS NULL))
);

-- Submissions look up the active standing rules of their operation and agent.
CREATE INDEX standing_rules_active ON standing_rules (operation, agent, expires_at)
    WHERE revoked_at IS NULL;

-- The grant is immutable: the only change ever allowed is one revocation naming who and when.
CREATE FUNCTION standing_rules_only_revocation_changes() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP <> 'UPDATE'
       OR (NEW.id, NEW.operation, NEW.agent, NEW.rule_id, NEW.ceiling_field, NEW.ceiling,
           NEW.created_by, NEW.created_from, NEW.created_at, NEW.expires_at)
          IS DISTINCT FROM
          (OLD.id, OLD.operation, OLD.agent, OLD.rule_id, OLD.ceiling_field, OLD.ceiling,
           OLD.created_by, OLD.created_from, OLD.created_at, OLD.expires_at)
       OR OLD.revoked_at IS NOT NULL OR NEW.revoked_at IS NULL
    THEN
        RAISE EXCEPTION 'standing_rules: a grant cannot be changed or deleted, only revoked once (%)',
            TG_OP USING ERRCODE = 'integrity_constraint_violation';
    END IF;
    RETURN NEW;
END;
$$;

CREATE TRIGGER standing_rules_only_revocation_changes
BEFORE UPDATE OR DELETE ON standing_rules
FOR EACH ROW EXECUTE FUNCTION standing_rules_only_revocation_changes();

CREATE TRIGGER standing_rules_refuse_truncate
BEFORE TRUNCATE ON standing_rules
FOR EACH STATEMENT EXECUTE FUNCTION standing_rules_only_revocation_changes();


-- A person's verdict on a sampled automatic approval: one per proposal, never changed.
CREATE TABLE reviews (
    proposal_id  text PRIMARY KEY REFERENCES proposals (id),
    verdict      text NOT NULL CHECK (verdict IN ('ok', 'should_have_asked')),
    reviewer     text NOT NULL,
    at           timestamptz NOT NULL
);

CREATE FUNCTION reviews_are_append_only() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'reviews are append-only: a verdict cannot be changed or deleted (%)', TG_OP
        USING ERRCODE = 'integrity_constraint_violation';
END;
$$;

CREATE TRIGGER reviews_refuse_update_and_delete
BEFORE UPDATE OR DELETE ON reviews
FOR EACH ROW EXECUTE FUNCTION reviews_are_append_only();

CREATE TRIGGER reviews_refuse_truncate
BEFORE TRUNCATE ON reviews
FOR EACH STATEMENT EXECUTE FUNCTION reviews_are_append_only();


-- Which standing rule approved a proposal (NULL: none), and whether its automatic approval was
-- sampled for review. Both are decided when the proposal is created and never change.
ALTER TABLE proposals
    ADD COLUMN standing_rule_id text REFERENCES standing_rules (id),
    ADD COLUMN review_sampled boolean NOT NULL DEFAULT false;

CREATE FUNCTION reviews_only_of_sampled_proposals() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM proposals WHERE id = NEW.proposal_id AND review_sampled) THEN
        RAISE EXCEPTION 'reviews: only a proposal sampled for review can be reviewed'
            USING ERRCODE = 'integrity_constraint_violation';
    END IF;
    RETURN NEW;
END;
$$;

CREATE TRIGGER reviews_only_of_sampled_proposals
BEFORE INSERT ON reviews
FOR EACH ROW EXECUTE FUNCTION reviews_only_of_sampled_proposals();

-- The calls a standing rule approved; the sampled automatic approvals, per rule (review stats).
CREATE INDEX proposals_standing_rule ON proposals (standing_rule_id)
    WHERE standing_rule_id IS NOT NULL;
CREATE INDEX proposals_review_sampled ON proposals (rule_id, standing_rule_id)
    WHERE review_sampled;

CREATE FUNCTION proposals_standing_is_frozen() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.standing_rule_id IS DISTINCT FROM OLD.standing_rule_id
       OR NEW.review_sampled IS DISTINCT FROM OLD.review_sampled
    THEN
        RAISE EXCEPTION 'proposals: the standing rule and review sample of a proposal are frozen'
            USING ERRCODE = 'integrity_constraint_violation';
    END IF;
    RETURN NEW;
END;
$$;

CREATE TRIGGER proposals_standing_is_frozen
BEFORE UPDATE OF standing_rule_id, review_sampled ON proposals
FOR EACH ROW EXECUTE FUNCTION proposals_standing_is_frozen();

-- A proposal approved by a standing rule is created auto-approved, and the rule must cover it:
-- same operation, agent and policy rule, not requested by the granter, unrevoked, unexpired at
-- creation, and the ceiling argument a number at most the ceiling. The rule's row is locked
-- (FOR SHARE) so a revocation cannot commit between this check and the proposal's commit.
CREATE FUNCTION proposals_standing_rule_covers() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.standing_rule_id IS NULL THEN
        RETURN NEW;
    END IF;
    IF NEW.decision <> 'auto' OR NEW.status <> 'executing' OR NOT EXISTS (
        SELECT 1 FROM standing_rules AS s
        WHERE s.id = NEW.standing_rule_id
          AND s.operation = NEW.operation AND s.agent = NEW.agent AND s.rule_id = NEW.rule_id
          AND s.created_by <> NEW.requested_by
          AND s.revoked_at IS NULL AND s.expires_at > NEW.created_at
          AND json_typeof(NEW.arguments -> s.ceiling_field) = 'number'
          AND (NEW.arguments ->> s.ceiling_field)::numeric <= s.ceiling
        FOR SHARE)
    THEN
        RAISE EXCEPTION 'proposals: the standing rule does not cover this proposal'
            USING ERRCODE = 'integrity_constraint_violation';
    END IF;
    RETURN NEW;
END;
$$;

CREATE TRIGGER proposals_standing_rule_covers
BEFORE INSERT ON proposals
FOR EACH ROW EXECUTE FUNCTION proposals_standing_rule_covers();
