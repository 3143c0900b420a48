-- 0007: standing rules ("approve, and allow similar for a while"), the reviews of sampled
-- automatic approvals, and which standing rule approved a proposal.
--
-- A standing rule is granted once and never edited: only its revocation (who, when) may be
-- written, once. Reviews are append-only, one per proposal. The database also refuses a
-- proposal that claims a standing rule not covering it (contracts/standing.py says the same in
-- Python), and a review of a proposal that was not sampled for review.


CREATE TABLE standing_rules (
    id             TEXT PRIMARY KEY,
    operation      TEXT NOT NULL,
    agent          TEXT NOT NULL,
    rule_id        TEXT NOT NULL,          -- the ask rule whose calls it approves
    ceiling_field  TEXT NOT NULL,          -- the numeric argument it bounds
    ceiling        ANY NOT NULL CHECK (typeof(ceiling) IN ('integer', 'real')),
    created_by     TEXT NOT NULL,          -- the admin who granted it
    -- the proposal whose approval granted it: one standing rule per approval at most
    created_from   TEXT NOT NULL UNIQUE REFERENCES proposals (id),
    created_at     TEXT NOT NULL,
    expires_at     TEXT NOT NULL,
    revoked_by     TEXT,
    revoked_at     TEXT,
    CHECK (expires_at > created_at),
    -- contracts.standing.MAX_STANDING: 30 days (and a second's slack for julianday's floats)
    CHECK (julianday(expires_at) - julianday(created_at) <= 30.00001),
    CHECK ((revoked_by IS NULL) = (revoked_at IS NULL))
) STRICT;

-- Submissions look up the active standing rules of their operation and agent.
CREATE INDEX standing_rules_active ON standing_rules (operation, agent, expires_at)
    WHERE revoked_at IS NULL;

-- The grant is immutable: the only change ever allowed is one revocation naming who and when.
CREATE TRIGGER standing_rules_only_revocation_changes
BEFORE UPDATE ON standing_rules
WHEN NEW.id IS NOT OLD.id OR NEW.operation IS NOT OLD.operation OR NEW.agent IS NOT OLD.agent
  OR NEW.rule_id IS NOT OLD.rule_id OR NEW.ceiling_field IS NOT OLD.ceiling_field
  OR NEW.ceiling IS NOT OLD.ceiling OR NEW.created_by IS NOT OLD.created_by
  OR NEW.created_from IS NOT OLD.created_from OR NEW.created_at IS NOT OLD.created_at
  OR NEW.expires_at IS NOT OLD.expires_at
  OR OLD.revoked_at IS NOT NULL OR NEW.revoked_at IS NULL
BEGIN
    SELECT RAISE(ABORT, 'standing_rules: a grant cannot be changed, only revoked once');
END;

CREATE TRIGGER standing_rules_refuse_delete
BEFORE DELETE ON standing_rules
BEGIN
    SELECT RAISE(ABORT, 'standing_rules: a grant cannot be deleted; revoke it');
END;


-- A person's verdict on a sampled automatic approval: one per proposal, never changed.
CREATE TABLE reviews (
    proposal_id  TEXT PRIMARY KEY REFERENCES proposals (id),
    verdict      TEXT NOT NULL CHECK (verdict IN ('ok', 'should_have_asked')),
    reviewer     TEXT NOT NULL,
    at           TEXT NOT NULL
) STRICT;

CREATE TRIGGER reviews_refuse_update
BEFORE UPDATE ON reviews
BEGIN
    SELECT RAISE(ABORT, 'reviews are append-only: a verdict cannot be changed');
END;

CREATE TRIGGER reviews_refuse_delete
BEFORE DELETE ON reviews
BEGIN
    SELECT RAISE(ABORT, 'reviews are append-only: a verdict cannot be deleted');
END;

CREATE TRIGGER reviews_only_of_sampled_proposals
BEFORE INSERT ON reviews
WHEN NOT EXISTS (SELECT 1 FROM proposals WHERE id = NEW.proposal_id AND review_sampled = 1)
BEGIN
    SELECT RAISE(ABORT, 'reviews: only a proposal sampled for review can be reviewed');
END;


-- Which standing rule approved a proposal (NULL: none), and whether its automatic approval was
-- sampled for review. Both are decided when the proposal is created and never change.
ALTER TABLE proposals ADD COLUMN standing_rule_id TEXT REFERENCES standing_rules (id);
ALTER TABLE proposals ADD COLUMN review_sampled INTEGER NOT NULL DEFAULT 0
    CHECK (review_sampled IN (0, 1));

-- The calls a standing rule approved; the sampled automatic approvals, per rule (review stats).
CREATE INDEX proposals_standing_rule ON proposals (standing_rule_id)
    WHERE standing_rule_id IS NOT NULL;
CREATE INDEX proposals_review_sampled ON proposals (rule_id, standing_rule_id)
    WHERE review_sampled = 1;

CREATE TRIGGER proposals_standing_is_frozen
BEFORE UPDATE OF standing_rule_id, review_sampled ON proposals
WHEN NEW.standing_rule_id IS NOT OLD.standing_rule_id OR NEW.review_sampled IS NOT OLD.review_sampled
BEGIN
    SELECT RAISE(ABORT, 'proposals: the standing rule and review sample of a proposal are frozen');
END;

-- A proposal approved by a standing rule is created auto-approved, and the rule must cover it:
-- same operation, agent and policy rule, not requested by the granter, unrevoked, unexpired at
-- creation, and the ceiling argument a number at most the ceiling.
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
          AND json_extract(NEW.arguments, '$."' || s.ceiling_field || '"') <= s.ceiling))
BEGIN
    SELECT RAISE(ABORT, 'proposals: the standing rule does not cover this proposal');
END;
