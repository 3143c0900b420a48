-- 0004: escalations, conversations an agent hands to people (store/escalations.py; PostgreSQL).
--
-- Their audit entries share the one hash chain of audit_log (its proposal_id column holds the
-- escalation id, 'esc_...'), written in the transaction of each transition after the
-- escalation's row is locked by its compare-and-set (row first, then the audit head: the lock
-- order of store/postgres.py). Their Slack posts, updates, replies and agent callbacks go through
-- escalation_outbox, parallel to the proposals' outbox and delivered by the same worker loop.

CREATE TABLE escalations (
    id                      text PRIMARY KEY,
    agent                   text NOT NULL,
    submission_key          text NOT NULL,
    submission_fingerprint  text NOT NULL,
    conversation_id         text NOT NULL,
    requested_by            text,
    customer_ref            text,
    team                    text,
    summary                 json NOT NULL CHECK (json_typeof(summary) = 'object'),
    trigger                 json NOT NULL CHECK (json_typeof(trigger) = 'object'),
    verdict                 json NOT NULL CHECK (json_typeof(verdict) = 'object'),
    channel                 text NOT NULL,
    callback_url            text,
    created_at              timestamptz NOT NULL,
    -- Exactly the values of store.escalations.EscalationStatus.
    status                  text NOT NULL CONSTRAINT escalations_status_is_a_lifecycle_status
                            CHECK (status IN ('open', 'taken', 'handed_back', 'resolved')),
    owner                   text,
    note                    text,
    resolved_by             text,
    resolved_at             timestamptz,
    announced_at            timestamptz NOT NULL,
    reannouncements         integer NOT NULL DEFAULT 0 CHECK (reannouncements >= 0),
    slack_channel           text,
    slack_ts                text,
    updated_at              timestamptz NOT NULL,
    CONSTRAINT escalations_someone_is_accountable
        CHECK (requested_by IS NOT NULL OR customer_ref IS NOT NULL),
    CONSTRAINT escalations_one_owner_while_taken CHECK ((status = 'taken') = (owner IS NOT NULL)),
    CONSTRAINT escalations_resolver_when_resolved
        CHECK ((status = 'resolved') = (resolved_by IS NOT NULL AND resolved_at IS NOT NULL)),
    CONSTRAINT escalations_one_per_submission_key UNIQUE (agent, submission_key)
);

CREATE INDEX escalations_open_announced ON escalations (announced_at, id) WHERE status = 'open';
CREATE INDEX escalations_owner ON escalations (owner, updated_at) WHERE status = 'taken';

-- The lifecycle, enforced by the database (store.escalations.ESCALATION_TRANSITIONS).
CREATE FUNCTION escalations_status_follows_lifecycle() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.status <> OLD.status AND OLD.status || ' -> ' || NEW.status NOT IN (
        'open -> taken',
        'open -> resolved',
        'taken -> handed_back',
        'taken -> resolved',
        'handed_back -> taken',
        'handed_back -> resolved')
    THEN
        RAISE EXCEPTION 'escalations: % -> % is not a lifecycle transition', OLD.status, NEW.status
            USING ERRCODE = 'integrity_constraint_violation';
    END IF;
    RETURN NEW;
END;
$$;

CREATE TRIGGER escalations_status_follows_lifecycle
BEFORE UPDATE OF status ON escalations
FOR EACH ROW EXECUTE FUNCTION escalations_status_follows_lifecycle();

-- What the agent reported and what the server concluded are frozen once stored.
CREATE FUNCTION escalations_report_is_frozen() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'escalations: what the agent reported cannot be changed'
        USING ERRCODE = 'integrity_constraint_violation';
END;
$$;

CREATE TRIGGER escalations_report_is_frozen
BEFORE UPDATE OF id, agent, submission_key, submission_fingerprint, conversation_id,
    requested_by, customer_ref, team, summary, trigger, verdict, channel, callback_url, created_at
ON escalations
FOR EACH ROW EXECUTE FUNCTION escalations_report_is_frozen();

-- The escalations' outbox: the same columns and rules as the proposals' outbox.
CREATE TABLE escalation_outbox (
    id               bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    escalation_id    text NOT NULL REFERENCES escalations (id),
    effect           text NOT NULL
                     CHECK (effect IN ('slack.post', 'slack.update', 'slack.reply', 'callback')),
    lane             text NOT NULL CHECK (lane IN ('slack', 'callback')),
    status           text NOT NULL CHECK (status IN ('open', 'taken', 'handed_back', 'resolved')),
    -- a re-announcement of an unclaimed escalation rather than a status change
    reannounce       boolean NOT NULL DEFAULT false,
    created_at       timestamptz NOT NULL,
    attempts         integer NOT NULL DEFAULT 0 CHECK (attempts >= 0),
    next_attempt_at  timestamptz NOT NULL,
    leased_until     timestamptz,
    delivered_at     timestamptz,
    abandoned_at     timestamptz,
    last_error       text
);

CREATE INDEX escalation_outbox_due ON escalation_outbox (next_attempt_at, id)
    WHERE delivered_at IS NULL AND abandoned_at IS NULL;

CREATE INDEX escalation_outbox_open ON escalation_outbox (escalation_id, lane, id)
    WHERE delivered_at IS NULL AND abandoned_at IS NULL;

-- App Home: a person's recent decisions.
CREATE INDEX proposals_decided_by ON proposals (decided_by, decided_at)
    WHERE decided_by IS NOT NULL;
