-- 0006: approval depth: risk classes, quorum approvals, edits that supersede, reminders and one
-- extension of the expiry, and the outbox effects they add.
-- countersign-migrate: foreign_keys=off
--
-- SQLite cannot change a CHECK constraint in place, and the status CHECK gains 'superseded', so
-- the proposals table is rebuilt: created anew, filled from the old one, swapped in, and its
-- indexes and triggers created again. Foreign keys are off for this one migration (the runner
-- reads the marker above) and checked with PRAGMA foreign_key_check before it commits.

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
    -- Exactly the values of store.lifecycle.Status (tests/store/test_sqlite.py checks this).
    status                  TEXT NOT NULL CHECK (status IN (
                                'pending', 'denied', 'rejected', 'expired', 'executing',
                                'succeeded', 'needs_reconciliation', 'revision_required',
                                'failed', 'superseded')),
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
    UNIQUE (agent, submission_key),
    CHECK ((supersedes IS NULL) = (edited_by IS NULL)),
    CHECK ((extended_by IS NULL) = (extended_at IS NULL))
) STRICT;

INSERT INTO proposals_new (
    id, agent, submission_key, submission_fingerprint, requested_by, run_id, operation, request,
    arguments, preview, binding_hash, agent_reason, callback_url, rule_id, decision, policy_note,
    approver_roles, channel, status, created_at, expires_at, slack_channel, slack_ts, decided_by,
    decided_at, decision_note, outcome, updated_at, lease_until
)
SELECT
    id, agent, submission_key, submission_fingerprint, requested_by, run_id, operation, request,
    arguments, preview, binding_hash, agent_reason, callback_url, rule_id, decision, policy_note,
    approver_roles, channel, status, created_at, expires_at, slack_channel, slack_ts, decided_by,
    decided_at, decision_note, outcome, updated_at, lease_until
FROM proposals;

DROP TABLE proposals;
ALTER TABLE proposals_new RENAME TO proposals;

-- The indexes of 0001-0005, again; the approver's queue now leads with the risk class.
CREATE INDEX proposals_status_expires_at ON proposals (status, expires_at);
CREATE INDEX proposals_executing_lease ON proposals (lease_until) WHERE status = 'executing';
CREATE INDEX proposals_decided_by ON proposals (decided_by, decided_at)
    WHERE decided_by IS NOT NULL;
CREATE INDEX proposals_pending_queue ON proposals (channel, risk_rank, expires_at, id)
    WHERE status = 'pending';
-- Every queue across channels: riskiest first, then soonest expiry.
CREATE INDEX proposals_pending_by_risk ON proposals (risk_rank, expires_at, id)
    WHERE status = 'pending';
-- The reminder sweep: pending proposals not yet reminded, by when their reminder is due.
CREATE INDEX proposals_unreminded ON proposals (remind_at)
    WHERE status = 'pending' AND reminded_at IS NULL AND remind_at IS NOT NULL;

-- The lifecycle (store.lifecycle.TRANSITIONS), with the edge an edit adds.
CREATE TRIGGER proposals_status_follows_lifecycle
BEFORE UPDATE OF status ON proposals
WHEN NEW.status <> OLD.status AND OLD.status || ' -> ' || NEW.status NOT IN (
    'pending -> executing',
    'pending -> rejected',
    'pending -> expired',
    'pending -> superseded',
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

-- The frozen contract, now with its risk class, quorum and edit lineage. The expiry is no longer
-- in it: an approver may extend a pending proposal once (the trigger below).
CREATE TRIGGER proposals_contract_is_frozen
BEFORE UPDATE OF id, agent, submission_key, submission_fingerprint, requested_by, run_id,
    operation, request, arguments, preview, binding_hash, agent_reason, callback_url, rule_id,
    decision, policy_note, approver_roles, channel, created_at, risk, quorum, supersedes,
    edited_by
ON proposals
BEGIN
    SELECT RAISE(ABORT, 'proposals: the frozen contract of a proposal cannot be changed');
END;

-- The expiry changes only with the one extension, which names who extended it and stays.
CREATE TRIGGER proposals_expiry_extends_once
BEFORE UPDATE OF expires_at, extended_by, extended_at ON proposals
WHEN OLD.extended_by IS NOT NULL
  OR (NEW.expires_at IS NOT OLD.expires_at AND NEW.extended_by IS NULL)
  OR (NEW.extended_by IS NOT NULL AND (OLD.status <> 'pending'
      OR NEW.expires_at IS NULL OR OLD.expires_at IS NULL OR NEW.expires_at <= OLD.expires_at))
BEGIN
    SELECT RAISE(ABORT, 'proposals: the expiry of a pending proposal can be extended once');
END;

-- The outbox gains the effects of these features (store.lifecycle.Effect): a reminder in the
-- thread, and a sampled auto-approval posted for review. Same columns, rows and indexes as 0003.
CREATE TABLE outbox_new (
    id               INTEGER PRIMARY KEY AUTOINCREMENT,
    proposal_id      TEXT NOT NULL REFERENCES proposals (id),
    effect           TEXT NOT NULL
                     CHECK (effect IN ('slack.post', 'slack.update', 'slack.reply',
                                       'slack.remind', 'slack.review', 'callback')),
    lane             TEXT NOT NULL CHECK (lane IN ('slack', 'callback')),
    -- the status the proposal entered: which reply to post, which state to call back with
    status           TEXT NOT NULL,
    created_at       TEXT NOT NULL,
    attempts         INTEGER NOT NULL DEFAULT 0 CHECK (attempts >= 0),
    next_attempt_at  TEXT NOT NULL,
    leased_until     TEXT,
    delivered_at     TEXT,
    abandoned_at     TEXT,
    last_error       TEXT
) STRICT;

INSERT INTO outbox_new
SELECT id, proposal_id, effect, lane, status, created_at, attempts, next_attempt_at,
       leased_until, delivered_at, abandoned_at, last_error
FROM outbox;

DROP TABLE outbox;
ALTER TABLE outbox_new RENAME TO outbox;

CREATE INDEX outbox_due ON outbox (next_attempt_at, id)
    WHERE delivered_at IS NULL AND abandoned_at IS NULL;
CREATE INDEX outbox_open_by_proposal ON outbox (proposal_id, lane, id)
    WHERE delivered_at IS NULL AND abandoned_at IS NULL;

-- Approvals towards a quorum: one per person and proposal, bound to the binding hash the person
-- saw. Append-only, like the audit log: a recorded approval is never changed or withdrawn.
CREATE TABLE approvals (
    proposal_id   TEXT NOT NULL REFERENCES proposals (id),
    approver      TEXT NOT NULL,
    binding_hash  TEXT NOT NULL,
    approved_at   TEXT NOT NULL,
    PRIMARY KEY (proposal_id, approver)
) STRICT;

CREATE TRIGGER approvals_refuse_update
BEFORE UPDATE ON approvals
BEGIN
    SELECT RAISE(ABORT, 'approvals are append-only: an approval cannot be changed');
END;

CREATE TRIGGER approvals_refuse_delete
BEFORE DELETE ON approvals
BEGIN
    SELECT RAISE(ABORT, 'approvals are append-only: an approval cannot be deleted');
END;
