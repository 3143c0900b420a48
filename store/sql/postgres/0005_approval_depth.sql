-- 0005: approval depth: risk classes, quorum approvals, edits that supersede, reminders and one
-- extension of the expiry (PostgreSQL).

ALTER TABLE proposals
    -- the operation's risk class (contracts.base.Risk), frozen with the contract
    ADD COLUMN risk text NOT NULL DEFAULT 'irreversible'
        CHECK (risk IN ('read', 'reversible', 'irreversible')),
    -- queues show the riskiest first: irreversible 0, reversible 1, read 2
    ADD COLUMN risk_rank smallint GENERATED ALWAYS AS (
        CASE risk WHEN 'irreversible' THEN 0 WHEN 'reversible' THEN 1 ELSE 2 END) STORED,
    -- how many distinct people must approve before it runs
    ADD COLUMN quorum smallint NOT NULL DEFAULT 1 CHECK (quorum BETWEEN 1 AND 20),
    -- an edit: the proposal this one replaces, and who edited it
    ADD COLUMN supersedes text REFERENCES proposals (id),
    ADD COLUMN edited_by text,
    -- set on the replaced proposal when an edit supersedes it
    ADD COLUMN superseded_by text,
    -- the reminder before expiry: when it is due (set at creation), and when it was posted
    ADD COLUMN remind_at timestamptz,
    ADD COLUMN reminded_at timestamptz,
    ADD COLUMN extended_by text,
    ADD COLUMN extended_at timestamptz,
    ADD CONSTRAINT proposals_edit_names_its_editor CHECK ((supersedes IS NULL) = (edited_by IS NULL)),
    ADD CONSTRAINT proposals_extension_is_complete
        CHECK ((extended_by IS NULL) = (extended_at IS NULL));

-- Exactly the values of store.lifecycle.Status, with 'superseded'.
ALTER TABLE proposals DROP CONSTRAINT proposals_status_is_a_lifecycle_status;
ALTER TABLE proposals ADD CONSTRAINT proposals_status_is_a_lifecycle_status CHECK (status IN (
    'pending', 'denied', 'rejected', 'expired', 'executing', 'succeeded', 'needs_reconciliation',
    'revision_required', 'failed', 'superseded'));

-- The lifecycle (store.lifecycle.TRANSITIONS), with the edge an edit adds.
CREATE OR REPLACE FUNCTION proposals_status_follows_lifecycle() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.status <> OLD.status AND OLD.status || ' -> ' || NEW.status NOT IN (
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
    THEN
        RAISE EXCEPTION 'proposals: % -> % is not a lifecycle transition', OLD.status, NEW.status
            USING ERRCODE = 'integrity_constraint_violation';
    END IF;
    RETURN NEW;
END;
$$;

-- The frozen contract, now with its risk class, quorum and edit lineage. The expiry is no longer
-- in it: an approver may extend a pending proposal once (the trigger below).
DROP TRIGGER proposals_contract_is_frozen ON proposals;
CREATE TRIGGER proposals_contract_is_frozen
BEFORE UPDATE OF id, agent, submission_key, submission_fingerprint, requested_by, run_id,
    operation, request, arguments, preview, binding_hash, agent_reason, callback_url, rule_id,
    decision, policy_note, approver_roles, channel, created_at, risk, quorum, supersedes,
    edited_by
ON proposals
FOR EACH ROW EXECUTE FUNCTION proposals_contract_is_frozen();

-- The expiry changes only with the one extension, which names who extended it and stays.
CREATE FUNCTION proposals_expiry_extends_once() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF OLD.extended_by IS NOT NULL
       OR (NEW.expires_at IS DISTINCT FROM OLD.expires_at AND NEW.extended_by IS NULL)
       OR (NEW.extended_by IS NOT NULL AND (OLD.status <> 'pending'
           OR NEW.expires_at IS NULL OR OLD.expires_at IS NULL
           OR NEW.expires_at <= OLD.expires_at))
    THEN
        RAISE EXCEPTION 'proposals: the expiry of a pending proposal can be extended once'
            USING ERRCODE = 'integrity_constraint_violation';
    END IF;
    RETURN NEW;
END;
$$;

CREATE TRIGGER proposals_expiry_extends_once
BEFORE UPDATE OF expires_at, extended_by, extended_at ON proposals
FOR EACH ROW
WHEN (OLD.expires_at IS DISTINCT FROM NEW.expires_at
      OR OLD.extended_by IS DISTINCT FROM NEW.extended_by
      OR OLD.extended_at IS DISTINCT FROM NEW.extended_at)
EXECUTE FUNCTION proposals_expiry_extends_once();

-- An approver's queue (one channel) and every queue: riskiest first, then soonest expiry, reading
-- only the rows returned however many are stored.
CREATE INDEX proposals_pending_queue ON proposals (channel, risk_rank, expires_at, id)
    WHERE status = 'pending';
CREATE INDEX proposals_pending_by_risk ON proposals (risk_rank, expires_at, id)
    WHERE status = 'pending';
-- The reminder sweep: pending proposals not yet reminded, by when their reminder is due.
CREATE INDEX proposals_unreminded ON proposals (remind_at)
    WHERE status = 'pending' AND reminded_at IS NULL AND remind_at IS NOT NULL;

-- The outbox gains the effects of these features (store.lifecycle.Effect): a reminder in the
-- thread, and a sampled auto-approval posted for review.
ALTER TABLE outbox DROP CONSTRAINT outbox_effect_check;
ALTER TABLE outbox ADD CONSTRAINT outbox_effect_is_an_effect CHECK (effect IN (
    'slack.post', 'slack.update', 'slack.reply', 'slack.remind', 'slack.review', 'callback'));

-- Approvals towards a quorum: one per person and proposal, bound to the binding hash the person
-- saw. Append-only, like the audit log: a recorded approval is never changed or withdrawn.
CREATE TABLE approvals (
    proposal_id   text NOT NULL REFERENCES proposals (id),
    approver      text NOT NULL,
    binding_hash  text NOT NULL,
    approved_at   timestamptz NOT NULL,
    PRIMARY KEY (proposal_id, approver)
);

CREATE FUNCTION approvals_are_append_only() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'approvals are append-only: an approval cannot be changed or deleted'
        USING ERRCODE = 'integrity_constraint_violation';
END;
$$;

CREATE TRIGGER approvals_refuse_update_and_delete
BEFORE UPDATE OR DELETE ON approvals
FOR EACH ROW EXECUTE FUNCTION approvals_are_append_only();

CREATE TRIGGER approvals_refuse_truncate
BEFORE TRUNCATE ON approvals
FOR EACH STATEMENT EXECUTE FUNCTION approvals_are_append_only();

-- Change notifications (0003) carry the schema: one channel per schema, so deployments (or test
-- runs) sharing a database in separate schemas do not hear each other's proposals. The name is a
-- digest, because a channel name is at most 63 bytes and a schema name may be as long.
CREATE OR REPLACE FUNCTION proposals_notify_change() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('countersign_' || left(md5(current_schema()), 16), NEW.id);
    RETURN NULL;
END;
$$;
