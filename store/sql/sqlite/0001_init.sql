-- 0001_init: proposals, the append-only audit log and its head.
--
-- Conventions of this schema:
--   * Every datetime is UTC text in one fixed-width format, 'YYYY-MM-DDTHH:MM:SS.ffffffZ'
--     (store/rows.py writes and reads it). Fixed width makes text order equal time order, so
--     comparisons such as expires_at <= :now are correct in SQL.
--   * JSON values are TEXT checked with json_valid().
--   * Tables are STRICT: a value of the wrong type is refused instead of being converted.
-- The migration runner wraps this file in one transaction; it must not contain BEGIN/COMMIT.


-- One row per proposal: the frozen contract (never changed after insert) plus what happened
-- to it since (status, decision, Slack message, outcome).
CREATE TABLE proposals (
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
                                'failed')),
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
    -- One submission per idempotency key and agent: replays find the stored proposal.
    UNIQUE (agent, submission_key)
) STRICT;

-- The expiry sweep: pending proposals in expiry order.
CREATE INDEX proposals_status_expires_at ON proposals (status, expires_at);

-- The lifecycle, enforced by the database as well: a status may only change along an edge of
-- store.lifecycle.TRANSITIONS (tests/store/test_sqlite.py tries every pair).
CREATE TRIGGER proposals_status_follows_lifecycle
BEFORE UPDATE OF status ON proposals
WHEN NEW.status <> OLD.status AND OLD.status || ' -> ' || NEW.status NOT IN (
    'pending -> executing',
    'pending -> rejected',
    'pending -> expired',
    'executing -> succeeded',
    'executing -> needs_reconciliation',
    'executing -> revision_required',
    'executing -> failed')
BEGIN
    SELECT RAISE(ABORT, 'proposals: this status change is not a lifecycle transition');
END;

-- The frozen contract is frozen in the database too: what a person saw cannot be rewritten.
CREATE TRIGGER proposals_contract_is_frozen
BEFORE UPDATE OF id, agent, submission_key, submission_fingerprint, requested_by, run_id,
    operation, request, arguments, preview, binding_hash, agent_reason, callback_url, rule_id,
    decision, policy_note, approver_roles, channel, created_at, expires_at
ON proposals
BEGIN
    SELECT RAISE(ABORT, 'proposals: the frozen contract of a proposal cannot be changed');
END;


-- The audit log: a hash chain (store/audit.py). Entry n stores the hash of entry n-1 as
-- prev_hash; the first entry's prev_hash is store.audit.GENESIS.
-- proposal_id deliberately has no foreign key: refused attempts on ids that do not exist
-- (a forged button, a stale link) are worth recording too.
CREATE TABLE audit_log (
    seq          INTEGER PRIMARY KEY CHECK (seq >= 1),
    at           TEXT NOT NULL,
    proposal_id  TEXT,
    actor        TEXT NOT NULL,
    event        TEXT NOT NULL,
    detail       TEXT NOT NULL CHECK (json_valid(detail) AND json_type(detail) = 'object'),
    prev_hash    TEXT NOT NULL,
    hash         TEXT NOT NULL
) STRICT;

-- One proposal's history, in chain order.
CREATE INDEX audit_log_proposal_id ON audit_log (proposal_id, seq);

-- The head of the chain: the seq and hash of the last entry, in a single row.
-- A hash chain alone cannot tell a log whose last entries were deleted from a shorter log; the
-- head can. verify_audit compares the last entry with this row, so deleting entries from the
-- end is detected as well. (Whoever can drop triggers AND rewrite this row can still truncate
-- undetected; anchoring the head outside the database would be the next step.)
CREATE TABLE audit_head (
    id    INTEGER PRIMARY KEY CHECK (id = 1),
    seq   INTEGER NOT NULL CHECK (seq >= 0),
    hash  TEXT NOT NULL
) STRICT;

-- The empty chain: no entries, the genesis hash (store.audit.GENESIS).
INSERT INTO audit_head (id, seq, hash)
VALUES (1, 0, '0000000000000000000000000000000000000000000000000000000000000000');

-- Append-only: the database refuses to change or remove an audit entry.
CREATE TRIGGER audit_log_refuses_update
BEFORE UPDATE ON audit_log
BEGIN
    SELECT RAISE(ABORT, 'audit_log is append-only: entries cannot be changed');
END;

CREATE TRIGGER audit_log_refuses_delete
BEFORE DELETE ON audit_log
BEGIN
    SELECT RAISE(ABORT, 'audit_log is append-only: entries cannot be deleted');
END;

-- Linear: a new entry must follow the head exactly (next seq, previous hash = head hash).
CREATE TRIGGER audit_log_appends_to_head
BEFORE INSERT ON audit_log
WHEN NEW.seq <> (SELECT seq FROM audit_head) + 1
  OR NEW.prev_hash <> (SELECT hash FROM audit_head)
BEGIN
    SELECT RAISE(ABORT, 'audit_log: a new entry must follow the head of the chain');
END;

-- The head moves with every append, in the same transaction, whoever inserts.
CREATE TRIGGER audit_log_moves_head
AFTER INSERT ON audit_log
BEGIN
    UPDATE audit_head SET seq = NEW.seq, hash = NEW.hash WHERE id = 1;
END;

-- The head only moves forward, one entry at a time, and never disappears.
CREATE TRIGGER audit_head_moves_forward
BEFORE UPDATE ON audit_head
WHEN NEW.id <> OLD.id OR NEW.seq <> OLD.seq + 1
BEGIN
    SELECT RAISE(ABORT, 'audit_head only moves forward with an appended entry');
END;

CREATE TRIGGER audit_head_refuses_delete
BEFORE DELETE ON audit_head
BEGIN
    SELECT RAISE(ABORT, 'audit_head cannot be deleted');
END;
