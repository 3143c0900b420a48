-- 0001_init: proposals, the append-only audit log and its head (PostgreSQL).
--
-- Conventions of this schema:
--   * Every datetime is timestamptz (an instant; microsecond precision, as Python's datetime).
--   * JSON values are of type json, not jsonb. json keeps the text exactly as written and still
--     refuses what is not JSON; jsonb would rewrite it: 1e+20 comes back as the integer
--     100000000000000000000 (another canonical form, so another hash) and "\u0000" is refused.
--     The audit hash and the binding hash are computed over canonical JSON of what is read
--     back, so what is read back must be what was written. Nothing queries inside these values.
--   * Triggers raise SQLSTATE 23000 (integrity_constraint_violation): store/postgres.py reports
--     it as a refused change.
-- The migration runner wraps this file in one transaction; it must not contain BEGIN/COMMIT.


-- One row per proposal: the frozen contract (never changed after insert) plus what happened
-- to it since (status, decision, Slack message, outcome).
CREATE TABLE proposals (
    id                      text PRIMARY KEY,
    agent                   text NOT NULL,
    submission_key          text NOT NULL,
    submission_fingerprint  text NOT NULL,
    requested_by            text NOT NULL,
    run_id                  text,
    operation               text NOT NULL,
    request                 json NOT NULL,
    arguments               json NOT NULL CHECK (json_typeof(arguments) = 'object'),
    preview                 json NOT NULL CHECK (json_typeof(preview) = 'object'),
    binding_hash            text NOT NULL,
    agent_reason            text,
    callback_url            text,
    rule_id                 text,
    decision                text NOT NULL CHECK (decision IN ('auto', 'ask', 'deny')),
    policy_note             text NOT NULL,
    approver_roles          text[] NOT NULL DEFAULT '{}',
    channel                 text,
    -- Exactly the values of store.lifecycle.Status (tests/store/test_postgres.py checks this).
    status                  text NOT NULL CONSTRAINT proposals_status_is_a_lifecycle_status
                            CHECK (status IN (
                                'pending', 'denied', 'rejected', 'expired', 'executing',
                                'succeeded', 'needs_reconciliation', 'revision_required',
                                'failed')),
    created_at              timestamptz NOT NULL,
    expires_at              timestamptz,
    slack_channel           text,
    slack_ts                text,
    decided_by              text,
    decided_at              timestamptz,
    decision_note           text,
    outcome                 json CHECK (outcome IS NULL OR json_typeof(outcome) = 'object'),
    updated_at              timestamptz NOT NULL,
    -- One submission per idempotency key and agent: replays find the stored proposal.
    CONSTRAINT proposals_one_per_submission_key UNIQUE (agent, submission_key)
);

-- The expiry sweep: pending proposals in expiry order.
CREATE INDEX proposals_status_expires_at ON proposals (status, expires_at);

-- Pending proposals whose Slack message was never posted (Slack was down or refused the post).
CREATE INDEX proposals_unposted ON proposals (created_at, id)
    WHERE status = 'pending' AND channel IS NOT NULL AND slack_ts IS NULL;

-- The lifecycle, enforced by the database as well: a status may only change along an edge of
-- store.lifecycle.TRANSITIONS (tests/store/test_postgres.py tries every pair).
CREATE FUNCTION proposals_status_follows_lifecycle() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.status <> OLD.status AND OLD.status || ' -> ' || NEW.status NOT IN (
        'pending -> executing',
        'pending -> rejected',
        'pending -> expired',
        'executing -> succeeded',
        'executing -> needs_reconciliation',
        'executing -> revision_required',
        'executing -> failed')
    THEN
        RAISE EXCEPTION 'proposals: % -> % is not a lifecycle transition', OLD.status, NEW.status
            USING ERRCODE = 'integrity_constraint_violation';
    END IF;
    RETURN NEW;
END;
$$;

CREATE TRIGGER proposals_status_follows_lifecycle
BEFORE UPDATE OF status ON proposals
FOR EACH ROW EXECUTE FUNCTION proposals_status_follows_lifecycle();

-- The frozen contract is frozen in the database too: what a person saw cannot be rewritten.
CREATE FUNCTION proposals_contract_is_frozen() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'proposals: the frozen contract of a proposal cannot be changed'
        USING ERRCODE = 'integrity_constraint_violation';
END;
$$;

CREATE TRIGGER proposals_contract_is_frozen
BEFORE UPDATE OF id, agent, submission_key, submission_fingerprint, requested_by, run_id,
    operation, request, arguments, preview, binding_hash, agent_reason, callback_url, rule_id,
    decision, policy_note, approver_roles, channel, created_at, expires_at
ON proposals
FOR EACH ROW EXECUTE FUNCTION proposals_contract_is_frozen();


-- The audit log: a hash chain (store/audit.py). Entry n stores the hash of entry n-1 as
-- prev_hash; the first entry's prev_hash is store.audit.GENESIS.
-- proposal_id deliberately has no foreign key: refused attempts on ids that do not exist
-- (a forged button, a stale link) are worth recording too.
CREATE TABLE audit_log (
    seq          bigint PRIMARY KEY CHECK (seq >= 1),
    at           timestamptz NOT NULL,
    proposal_id  text,
    actor        text NOT NULL,
    event        text NOT NULL,
    detail       json NOT NULL CHECK (json_typeof(detail) = 'object'),
    prev_hash    text NOT NULL,
    hash         text NOT NULL
);

-- One proposal's history, in chain order.
CREATE INDEX audit_log_proposal_id ON audit_log (proposal_id, seq);

-- The head of the chain: the seq and hash of the last entry, in a single row. Every append
-- locks it (SELECT ... FOR UPDATE) before computing the next hash, so appends from any number
-- of connections and instances form one linear chain. verify_audit compares the last entry
-- with it, so deleting entries from the end is detected as well.
CREATE TABLE audit_head (
    id    integer PRIMARY KEY CHECK (id = 1),
    seq   bigint NOT NULL CHECK (seq >= 0),
    hash  text NOT NULL
);

-- The empty chain: no entries, the genesis hash (store.audit.GENESIS).
INSERT INTO audit_head (id, seq, hash)
VALUES (1, 0, '0000000000000000000000000000000000000000000000000000000000000000');

-- Append-only: the database refuses to change or remove an audit entry, row by row or all at
-- once (TRUNCATE).
CREATE FUNCTION audit_log_is_append_only() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'audit_log is append-only: entries cannot be changed or deleted (%)', TG_OP
        USING ERRCODE = 'integrity_constraint_violation';
END;
$$;

CREATE TRIGGER audit_log_refuses_update_and_delete
BEFORE UPDATE OR DELETE ON audit_log
FOR EACH ROW EXECUTE FUNCTION audit_log_is_append_only();

CREATE TRIGGER audit_log_refuses_truncate
BEFORE TRUNCATE ON audit_log
FOR EACH STATEMENT EXECUTE FUNCTION audit_log_is_append_only();

-- Linear: a new entry must follow the head exactly (next seq, previous hash = head hash); the
-- head then moves to it, in the same transaction, whoever inserts.
CREATE FUNCTION audit_log_appends_to_head() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    head audit_head%ROWTYPE;
BEGIN
    SELECT * INTO head FROM audit_head WHERE id = 1 FOR UPDATE;
    IF NOT FOUND OR NEW.seq <> head.seq + 1 OR NEW.prev_hash <> head.hash THEN
        RAISE EXCEPTION 'audit_log: a new entry must follow the head of the chain'
            USING ERRCODE = 'integrity_constraint_violation';
    END IF;
    UPDATE audit_head SET seq = NEW.seq, hash = NEW.hash WHERE id = 1;
    RETURN NEW;
END;
$$;

CREATE TRIGGER audit_log_appends_to_head
BEFORE INSERT ON audit_log
FOR EACH ROW EXECUTE FUNCTION audit_log_appends_to_head();

-- The head only moves forward, one entry at a time, and never disappears.
CREATE FUNCTION audit_head_moves_forward() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP <> 'UPDATE' OR NEW.id <> OLD.id OR NEW.seq <> OLD.seq + 1 THEN
        RAISE EXCEPTION 'audit_head only moves forward with an appended entry (%)', TG_OP
            USING ERRCODE = 'integrity_constraint_violation';
    END IF;
    RETURN NEW;
END;
$$;

CREATE TRIGGER audit_head_moves_forward
BEFORE UPDATE OR DELETE ON audit_head
FOR EACH ROW EXECUTE FUNCTION audit_head_moves_forward();

CREATE TRIGGER audit_head_refuses_truncate
BEFORE TRUNCATE ON audit_head
FOR EACH STATEMENT EXECUTE FUNCTION audit_head_moves_forward();
