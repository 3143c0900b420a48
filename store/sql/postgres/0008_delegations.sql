-- 0008: delegations (PostgreSQL). A person lets one agent act for them for a short while, from
-- Slack (/countersign delegate). Proposals the agent makes with the delegation's token name that
-- person as requested_by.
--
-- The token itself is never stored: only its SHA-256 (hex), looked up on each use. A delegation
-- is written once and never edited: only its revocation (who, when) may be written, once.
-- Nothing is deleted; an expired delegation simply stops working.


CREATE TABLE delegations (
    id          text PRIMARY KEY,                 -- "dl_" + 128 random bits
    token_hash  text NOT NULL UNIQUE CHECK (length(token_hash) = 64),
    agent       text NOT NULL,                    -- the agent that may act for the person
    person      text NOT NULL,                    -- the Slack user id who delegated
    created_at  timestamptz NOT NULL,
    expires_at  timestamptz NOT NULL,
    revoked_by  text,
    revoked_at  timestamptz,
    CONSTRAINT delegations_expire_after_creation CHECK (expires_at > created_at),
    -- bot.delegation.MAX_DELEGATION
    CONSTRAINT delegations_last_at_most_7_days CHECK (expires_at <= created_at + interval '7 days'),
    CONSTRAINT delegations_revocation_is_complete CHECK ((revoked_by IS NULL) = (revoked_at IS NULL))
);

-- A person's delegations (App Home, /countersign delegations), newest first.
CREATE INDEX delegations_person ON delegations (person, created_at);

CREATE FUNCTION delegations_only_revocation_changes() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP <> 'UPDATE'
       OR (NEW.id, NEW.token_hash, NEW.agent, NEW.person, NEW.created_at, NEW.expires_at)
          IS DISTINCT FROM
          (OLD.id, OLD.token_hash, OLD.agent, OLD.person, OLD.created_at, OLD.expires_at)
       OR OLD.revoked_at IS NOT NULL OR NEW.revoked_at IS NULL
    THEN
        RAISE EXCEPTION 'delegations: a delegation cannot be changed or deleted, only revoked once (%)',
            TG_OP USING ERRCODE = 'integrity_constraint_violation';
    END IF;
    RETURN NEW;
END;
$$;

CREATE TRIGGER delegations_only_revocation_changes
BEFORE UPDATE OR DELETE ON delegations
FOR EACH ROW EXECUTE FUNCTION delegations_only_revocation_changes();

CREATE TRIGGER delegations_refuse_truncate
BEFORE TRUNCATE ON delegations
FOR EACH STATEMENT EXECUTE FUNCTION delegations_only_revocation_changes();


-- The delegation a proposal was submitted under (NULL: the agent's own token). Decided when the
-- proposal is created and never changed. The database checks that the delegation names the
-- proposal's agent and requester and was unrevoked and unexpired when the proposal was created;
-- its row is locked (FOR SHARE) so a revocation cannot commit between the check and the insert.
ALTER TABLE proposals ADD COLUMN delegation_id text REFERENCES delegations (id);

CREATE INDEX proposals_delegation ON proposals (delegation_id) WHERE delegation_id IS NOT NULL;

CREATE FUNCTION proposals_delegation_is_frozen() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.delegation_id IS DISTINCT FROM OLD.delegation_id THEN
        RAISE EXCEPTION 'proposals: the delegation of a proposal is frozen'
            USING ERRCODE = 'integrity_constraint_violation';
    END IF;
    RETURN NEW;
END;
$$;

CREATE TRIGGER proposals_delegation_is_frozen
BEFORE UPDATE OF delegation_id ON proposals
FOR EACH ROW EXECUTE FUNCTION proposals_delegation_is_frozen();

CREATE FUNCTION proposals_delegation_covers() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.delegation_id IS NULL THEN
        RETURN NEW;
    END IF;
    IF NOT EXISTS (
        SELECT 1 FROM delegations AS d
        WHERE d.id = NEW.delegation_id AND d.agent = NEW.agent AND d.person = NEW.requested_by
          AND d.revoked_at IS NULL AND d.expires_at > NEW.created_at
        FOR SHARE)
    THEN
        RAISE EXCEPTION 'proposals: the delegation does not cover this proposal'
            USING ERRCODE = 'integrity_constraint_violation';
    END IF;
    RETURN NEW;
END;
$$;

CREATE TRIGGER proposals_delegation_covers
BEFORE INSERT ON proposals
FOR EACH ROW EXECUTE FUNCTION proposals_delegation_covers();
