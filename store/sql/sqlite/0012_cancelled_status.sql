-- 0012: a new final status, 'cancelled': the proposing agent withdrew its proposal while it was
-- pending (POST /v1/proposals/{id}/cancel). Rebuilds the proposals table.
-- countersign-migrate: foreign_keys=off
--
-- SQLite cannot change a CHECK constraint in place, and the status CHECK gains 'cancelled', so
-- the proposals table is rebuilt as 0006 did: created anew (with the columns 0007-0009 added),
-- filled from the old one, swapped in, and its indexes and triggers created again; the lifecycle
-- trigger gains the edge 'pending -> cancelled' (store.lifecycle.TRANSITIONS). Foreign keys are
-- off for this one migration (the runner reads the marker above) and checked with PRAGMA
-- foreign_key_check before it commits. The trigger on reviews reads proposals by name, so it is
-- dropped while the table is swapped and created again after.

DROP TRIGGER reviews_only_of_sampled_proposals;

CREATE TABLE proposals_new (
    id                      TEXT PRIMARY KEY,
    agent                   TEXT NOT NULL,
    submission_key          TEXT NOT NULL,
    submission_fingerprint  TEXT NOT NULL,
    requested_by            TEXT NOT NULL,
    run_id                  TEXT,
    operation               TEXT NOT NULL,
    request                 TEXT NOT NULL CHECK (json_valid(request)),
    arguments               TEXT NOT NULL
                            CHECK (json_valid(arguments) AND json_type(arguments) = 'object'),
    preview                 TEXT NOT NULL
                            CHECK (json_valid(preview) AND json_type(preview) = 'object'),
    binding_hash            TEXT NOT NULL,
    agent_reason            TEXT,
    callback_url            TEXT,
    rule_id                 TEXT,
    decision                TEXT NOT NULL CHECK (decision IN ('auto', 'ask', 'deny')),
    policy_note             TEXT NOT NULL,
    approver_roles          TEXT NOT NULL DEFAULT '[]'
                            CHECK (json_valid(approver_roles)
                                   AND json_type(approver_roles) = 'array'),
    channel                 TEXT,
    -- Exactly the values of store.lifecycle.Status (tests/store/test_lifecycle.py checks this).
    status                  TEXT NOT NULL CHECK (status IN (
                                'pending', 'denied', 'rejected', 'expired', 'executing',
                                'succeeded', 'needs_reconciliation', 'revision_required',
                                'failed', 'superseded', 'cancelled')),
    created_at              TEXT NOT NULL,
    expires_at              TEXT,
    slack_channel           TEXT,
    slack_ts                TEXT,
    decided_by              TEXT,
    decided_at              TEXT,
    decision_note           TEXT,
    outcome                 TEXT CHECK (outcome IS NULL OR
                                        (json_valid(outcome) AND json_type(outcome) = 'object')),
    updated_at              TEXT NOT NULL,
    lease_until             TEXT,
    -- the operation's risk class (contracts.base.Risk), frozen with the contract
    risk                    TEXT NOT NULL DEFAULT 'irreversible'
                            CHECK (risk IN ('read', 'reversible', 'irreversible')),
    -- queues show the riskiest first: irreversible 0, reversible 1, read 2
    risk_rank               INTEGER GENERATED ALWAYS AS (
                                CASE risk WHEN 'irreversible' THEN 0
                                          WHEN 'reversible' THEN 1 ELSE 2 END) STORED,
    -- how many distinct people must approve before it runs
    quorum                  INTEGER NOT NULL DEFAULT 1 CHECK (quorum BETWEEN 1 AND 20),
    -- an edit: the proposal this one replaces, and who edited it
    supersedes              TEXT REFERENCES proposals_new (id),
    edited_by               TEXT,
    -- set on the replaced proposal when an edit supersedes it
    superseded_by           TEXT,
    -- the reminder before expiry: when it is due (set at creation), and when it was posted
    remind_at               TEXT,
    reminded_at             TEXT,
    extended_by             TEXT,
    extended_at             TEXT,
    -- which standing rule approved it (NULL: none), and whether its automatic approval was
    -- sampled for review (0007)
    standing_rule_id        TEXT REFERENCES standing_rules (id),
    review_sampled          INTEGER NOT NULL DEFAULT 0 CHECK (review_sampled IN (0, 1)),
    -- the digest whose message shows it (0008)
    digest_id               TEXT REFERENCES digests (id),
    -- the delegation it was submitted under (0009)
    delegation_id           TEXT REFERENCES delegations (id),
    UNIQUE (agent, submission_key),
    CHECK ((supersedes IS NULL) = (edited_by IS NULL)),
    CHECK ((extended_by IS NULL) = (extended_at IS NULL))
) STRICT;

INSERT INTO proposals_new (
    id, agent, submission_key, submission_fingerprint, requested_by, run_id, operation, request,
    arguments, preview, binding_hash, agent_reason, callback_url, rule_id, decision, policy_note,
    approver_roles, channel, status, created_at, expires_at, slack_channel, slack_ts, decided_by,
    decided_at, decision_note, outcome, updated_at, lease_until, risk, quorum, supersedes,
    edited_by, superseded_by, remind_at, reminded_at, extended_by, extended_at, standing_rule_id,
    review_sampled, digest_id, delegation_id
)
SELECT
    id, agent, submission_key, submission_fingerprint, requested_by, run_id, operation, request,
    arguments, preview, binding_hash, agent_reason, callback_url, rule_id, decision, policy_note,
    approver_roles, channel, status, created_at, expires_at, slack_channel, slack_ts, decided_by,
    decided_at, decision_note, outcome, updated_at, lease_until, risk, quorum, supersedes,
    edited_by, superseded_by, remind_at, reminded_at, extended_by, extended_at, standing_rule_id,
    review_sampled, digest_id, delegation_id
FROM proposals;

DROP TABLE proposals;
ALTER TABLE proposals_new RENAME TO proposals;

-- The indexes of 0001-0011, again.
CREATE INDEX proposals_status_expires_at ON proposals (status, expires_at);
CREATE INDEX proposals_executing_lease ON proposals (lease_until) WHERE status = 'executing';
CREATE INDEX proposals_decided_by ON proposals (decided_by, decided_at)
    WHERE decided_by IS NOT NULL;
CREATE INDEX proposals_pending_queue ON proposals (channel, risk_rank, expires_at, id)
    WHERE status = 'pending';
CREATE INDEX proposals_pending_by_risk ON proposals (risk_rank, expires_at, id)
    WHERE status = 'pending';
CREATE INDEX proposals_unreminded ON proposals (remind_at)
    WHERE status = 'pending' AND reminded_at IS NULL AND remind_at IS NOT NULL;
CREATE INDEX proposals_standing_rule ON proposals (standing_rule_id)
    WHERE standing_rule_id IS NOT NULL;
CREATE INDEX proposals_review_sampled ON proposals (rule_id, standing_rule_id)
    WHERE review_sampled = 1;
CREATE INDEX proposals_digest_items ON proposals (digest_id, created_at, id)
    WHERE digest_id IS NOT NULL;
CREATE INDEX proposals_delegation ON proposals (delegation_id) WHERE delegation_id IS NOT NULL;
CREATE INDEX proposals_pending_by_agent ON proposals (agent, risk_rank, expires_at, id)
    WHERE status = 'pending';

-- The lifecycle (store.lifecycle.TRANSITIONS), with the edge a withdrawal adds.
CREATE TRIGGER proposals_status_follows_lifecycle
BEFORE UPDATE OF status ON proposals
WHEN NEW.status <> OLD.status AND OLD.status || ' -> ' || NEW.status NOT IN (
    'pending -> executing',
    'pending -> rejected',
    'pending -> expired',
    'pending -> superseded',
    'pending -> cancelled',
    'executing -> succeeded',
    'executing -> needs_reconciliation',
    'executing -> revision_required',
    'executing -> failed',
    'needs_reconciliation -> succeeded',
    'needs_reconciliation -> failed',
    'needs_reconciliation -> executing')
BEGIN
    SELECT RAISE(ABORT, 'proposals: this status change is not a lifecycle transition');
END;

-- The other triggers of 0006-0010, again, unchanged.
CREATE TRIGGER proposals_contract_is_frozen
BEFORE UPDATE OF id, agent, submission_key, submission_fingerprint, requested_by, run_id,
    operation, request, arguments, preview, binding_hash, agent_reason, callback_url, rule_id,
    decision, policy_note, approver_roles, channel, created_at, risk, quorum, supersedes,
    edited_by
ON proposals
BEGIN
    SELECT RAISE(ABORT, 'proposals: the frozen contract of a proposal cannot be changed');
END;

CREATE TRIGGER proposals_expiry_extends_once
BEFORE UPDATE OF expires_at, extended_by, extended_at ON proposals
WHEN OLD.extended_by IS NOT NULL
  OR (NEW.expires_at IS NOT OLD.expires_at AND NEW.extended_by IS NULL)
  OR (NEW.extended_by IS NOT NULL AND (OLD.status <> 'pending'
      OR NEW.expires_at IS NULL OR OLD.expires_at IS NULL OR NEW.expires_at <= OLD.expires_at))
BEGIN
    SELECT RAISE(ABORT, 'proposals: the expiry of a pending proposal can be extended once');
END;

CREATE TRIGGER proposals_standing_is_frozen
BEFORE UPDATE OF standing_rule_id, review_sampled ON proposals
WHEN NEW.standing_rule_id IS NOT OLD.standing_rule_id OR NEW.review_sampled IS NOT OLD.review_sampled
BEGIN
    SELECT RAISE(ABORT, 'proposals: the standing rule and review sample of a proposal are frozen');
END;

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

CREATE TRIGGER proposals_digest_items_match
BEFORE UPDATE OF digest_id, slack_channel, slack_ts ON proposals
WHEN (OLD.digest_id IS NOT NULL AND NEW.digest_id IS NOT OLD.digest_id)
  OR (NEW.digest_id IS NOT NULL AND NOT EXISTS (
        SELECT 1 FROM digests AS d
        WHERE d.id = NEW.digest_id AND d.operation = NEW.operation
          AND d.requested_by = NEW.requested_by
          AND d.channel = NEW.slack_channel AND d.ts = NEW.slack_ts))
BEGIN
    SELECT RAISE(ABORT, 'proposals: a digest item stays in its digest, shown by its message, and shares its operation and requester');
END;

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

CREATE TRIGGER reviews_only_of_sampled_proposals
BEFORE INSERT ON reviews
WHEN NOT EXISTS (SELECT 1 FROM proposals WHERE id = NEW.proposal_id AND review_sampled = 1)
BEGIN
    SELECT RAISE(ABORT, 'reviews: only a proposal sampled for review can be reviewed');
END;
