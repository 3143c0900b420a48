-- 0004: escalations, conversations an agent hands to people (store/escalations.py).
--
-- Their audit entries share the one hash chain of audit_log (its proposal_id column holds the
-- escalation id, 'esc_...'), written in the transaction of each transition. Their Slack posts,
-- updates, replies and agent callbacks go through escalation_outbox, a table parallel to the
-- proposals' outbox and delivered by the same worker loop: a separate table keeps the proposals'
-- outbox, its constraints and its queries exactly as they are.

CREATE TABLE escalations (
    id                      TEXT PRIMARY KEY,
    agent                   TEXT NOT NULL,
    submission_key          TEXT NOT NULL,
    submission_fingerprint  TEXT NOT NULL,
    conversation_id         TEXT NOT NULL,
    requested_by            TEXT,
    customer_ref            TEXT,
    team                    TEXT,
    summary                 TEXT NOT NULL
                            CHECK (json_valid(summary) AND json_type(summary) = 'object'),
    trigger                 TEXT NOT NULL
                            CHECK (json_valid(trigger) AND json_type(trigger) = 'object'),
    verdict                 TEXT NOT NULL
                            CHECK (json_valid(verdict) AND json_type(verdict) = 'object'),
    channel                 TEXT NOT NULL,
    callback_url            TEXT,
    created_at              TEXT NOT NULL,
    -- Exactly the values of store.escalations.EscalationStatus.
    status                  TEXT NOT NULL
                            CHECK (status IN ('open', 'taken', 'handed_back', 'resolved')),
    owner                   TEXT,
    note                    TEXT,
    resolved_by             TEXT,
    resolved_at             TEXT,
    announced_at            TEXT NOT NULL,
    reannouncements         INTEGER NOT NULL DEFAULT 0 CHECK (reannouncements >= 0),
    slack_channel           TEXT,
    slack_ts                TEXT,
    updated_at              TEXT NOT NULL,
    -- someone is accountable: a person in Slack, or a customer
    CHECK (requested_by IS NOT NULL OR customer_ref IS NOT NULL),
    -- one owner exactly while taken; a resolver exactly when resolved
    CHECK ((status = 'taken') = (owner IS NOT NULL)),
    CHECK ((status = 'resolved') = (resolved_by IS NOT NULL AND resolved_at IS NOT NULL)),
    UNIQUE (agent, submission_key)
) STRICT;

-- The re-announcement sweep: open escalations by last announcement.
CREATE INDEX escalations_open_announced ON escalations (announced_at, id) WHERE status = 'open';
-- What a person owns (App Home).
CREATE INDEX escalations_owner ON escalations (owner, updated_at) WHERE status = 'taken';

-- The lifecycle, enforced by the database (store.escalations.ESCALATION_TRANSITIONS).
CREATE TRIGGER escalations_status_follows_lifecycle
BEFORE UPDATE OF status ON escalations
WHEN NEW.status <> OLD.status AND OLD.status || ' -> ' || NEW.status NOT IN (
    'open -> taken',
    'open -> resolved',
    'taken -> handed_back',
    'taken -> resolved',
    'handed_back -> taken',
    'handed_back -> resolved')
BEGIN
    SELECT RAISE(ABORT, 'escalations: this status change is not a lifecycle transition');
END;

-- What the agent reported and what the server concluded are frozen once stored.
CREATE TRIGGER escalations_report_is_frozen
BEFORE UPDATE OF id, agent, submission_key, submission_fingerprint, conversation_id,
    requested_by, customer_ref, team, summary, trigger, verdict, channel, callback_url, created_at
ON escalations
BEGIN
    SELECT RAISE(ABORT, 'escalations: what the agent reported cannot be changed');
END;

-- The escalations' outbox: the same columns and rules as the proposals' outbox.
CREATE TABLE escalation_outbox (
    id               INTEGER PRIMARY KEY AUTOINCREMENT,
    escalation_id    TEXT NOT NULL REFERENCES escalations (id),
    effect           TEXT NOT NULL
                     CHECK (effect IN ('slack.post', 'slack.update', 'slack.reply', 'callback')),
    lane             TEXT NOT NULL CHECK (lane IN ('slack', 'callback')),
    status           TEXT NOT NULL
                     CHECK (status IN ('open', 'taken', 'handed_back', 'resolved')),
    -- 1: a re-announcement of an unclaimed escalation rather than a status change
    reannounce       INTEGER NOT NULL DEFAULT 0 CHECK (reannounce IN (0, 1)),
    created_at       TEXT NOT NULL,
    attempts         INTEGER NOT NULL DEFAULT 0 CHECK (attempts >= 0),
    next_attempt_at  TEXT NOT NULL,
    leased_until     TEXT,
    delivered_at     TEXT,
    abandoned_at     TEXT,
    last_error       TEXT
) STRICT;

CREATE INDEX escalation_outbox_due ON escalation_outbox (next_attempt_at, id)
    WHERE delivered_at IS NULL AND abandoned_at IS NULL;

CREATE INDEX escalation_outbox_open ON escalation_outbox (escalation_id, lane, id)
    WHERE delivered_at IS NULL AND abandoned_at IS NULL;

-- App Home: the pending proposals by expiry (0001's index leads with status), and a person's
-- recent decisions.
CREATE INDEX proposals_decided_by ON proposals (decided_by, decided_at) WHERE decided_by IS NOT NULL;
