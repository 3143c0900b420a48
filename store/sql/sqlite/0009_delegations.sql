-- 0009: delegations. A person lets one agent act for them for a short while, from Slack
-- (/countersign delegate). Proposals the agent makes with the delegation's token name that
-- person as requested_by.
--
-- The token itself is never stored: only its SHA-256 (hex), looked up on each use. A delegation
-- is written once and never edited: only its revocation (who, when) may be written, once.
-- Nothing is deleted; an expired delegation simply stops working.


CREATE TABLE delegations (
    id          TEXT PRIMARY KEY,                 -- "dl_" + 128 random bits
    token_hash  TEXT NOT NULL UNIQUE CHECK (length(token_hash) = 64),
    agent       TEXT NOT NULL,                    -- the agent that may act for the person
    person      TEXT NOT NULL,                    -- the Slack user id who delegated
    created_at  TEXT NOT NULL,
    expires_at  TEXT NOT NULL,
    revoked_by  TEXT,
    revoked_at  TEXT,
    CHECK (expires_at > created_at),
    -- bot.delegation.MAX_DELEGATION: 7 days (and a second's slack for julianday's floats)
    CHECK (julianday(expires_at) - julianday(created_at) <= 7.00001),
    CHECK ((revoked_by IS NULL) = (revoked_at IS NULL))
) STRICT;

-- A person's delegations (App Home, /countersign delegations), newest first.
CREATE INDEX delegations_person ON delegations (person, created_at);

CREATE TRIGGER delegations_only_revocation_changes
BEFORE UPDATE ON delegations
WHEN NEW.id IS NOT OLD.id OR NEW.token_hash IS NOT OLD.token_hash OR NEW.agent IS NOT OLD.agent
  OR NEW.person IS NOT OLD.person OR NEW.created_at IS NOT OLD.created_at
  OR NEW.expires_at IS NOT OLD.expires_at
  OR OLD.revoked_at IS NOT NULL OR NEW.revoked_at IS NULL
BEGIN
    SELECT RAISE(ABORT, 'delegations: a delegation cannot be changed, only revoked once');
END;

CREATE TRIGGER delegations_refuse_delete
BEFORE DELETE ON delegations
BEGIN
    SELECT RAISE(ABORT, 'delegations: a delegation cannot be deleted; revoke it');
END;


-- The delegation a proposal was submitted under (NULL: the agent's own token). Decided when the
-- proposal is created and never changed. The database checks that the delegation names the
-- proposal's agent and requester and was unrevoked and unexpired when the proposal was created.
ALTER TABLE proposals ADD COLUMN delegation_id TEXT REFERENCES delegations (id);

CREATE INDEX proposals_delegation ON proposals (delegation_id) WHERE delegation_id IS NOT NULL;

CREATE TRIGGER proposals_delegation_is_frozen
BEFORE UPDATE OF delegation_id ON proposals
WHEN NEW.delegation_id IS NOT OLD.delegation_id
BEGIN
    SELECT RAISE(ABORT, 'proposals: the delegation of a proposal is frozen');
END;

CREATE TRIGGER proposals_delegation_covers
BEFORE INSERT ON proposals
WHEN NEW.delegation_id IS NOT NULL AND NOT EXISTS (
    SELECT 1 FROM delegations AS d
    WHERE d.id = NEW.delegation_id AND d.agent = NEW.agent AND d.person = NEW.requested_by
      AND d.revoked_at IS NULL AND d.expires_at > NEW.created_at)
BEGIN
    SELECT RAISE(ABORT, 'proposals: the delegation does not cover this proposal');
END;
