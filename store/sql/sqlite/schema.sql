-- The SQLite schema as migrations 0001..0032 leave it: for reading, never applied.
-- Written by `python -m store.schema --write` (tests/store/test_schema.py checks it is current).
-- To change the schema, add a migration (docs/store.md says how), then write this file again.

CREATE TABLE approvals (
    proposal_id   TEXT NOT NULL REFERENCES proposals (id),
    approver      TEXT NOT NULL,
    binding_hash  TEXT NOT NULL,
    approved_at   TEXT NOT NULL,
    PRIMARY KEY (proposal_id, approver)
) STRICT;

CREATE TABLE archived_proposals (
    id           TEXT PRIMARY KEY,   -- the proposal removed from the proposals table
    archived_at  TEXT NOT NULL,
    archive      TEXT NOT NULL       -- the archive file's name, as retention wrote it
) STRICT;

CREATE TABLE audit_head (
    id    INTEGER PRIMARY KEY CHECK (id = 1),
    seq   INTEGER NOT NULL CHECK (seq >= 0),
    hash  TEXT NOT NULL
) STRICT;

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

CREATE TABLE batches (
    -- 'bt_' + 128 random bits
    id            TEXT PRIMARY KEY,
    -- the channel, rule, operation and approver roles its proposals share
    key           TEXT NOT NULL,
    channel       TEXT NOT NULL,
    rule_id       TEXT NOT NULL,
    opened_at     TEXT NOT NULL,
    -- when its posts are due: the window's end, or the moment it reached max_size
    closes_at     TEXT NOT NULL,
    max_size      INTEGER NOT NULL CHECK (max_size BETWEEN 1 AND 50),
    size          INTEGER NOT NULL DEFAULT 0 CHECK (size BETWEEN 0 AND max_size),
    -- open: proposals may join; closed: its digest is due; posted: its digest went out
    status        TEXT NOT NULL DEFAULT 'open' CHECK (status IN ('open', 'closed', 'posted')),
    -- while one worker posts its digest (store/batches.py lease_batch)
    leased_until  TEXT
) STRICT;

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

CREATE TABLE "digests" (
    id            TEXT PRIMARY KEY,
    channel       TEXT NOT NULL,
    ts            TEXT NOT NULL,
    operation     TEXT NOT NULL,
    -- NULL: the items of a batch, of several requesters
    requested_by  TEXT,
    created_at    TEXT NOT NULL,
    batch_id      TEXT REFERENCES batches (id),
    UNIQUE (channel, ts),
    CHECK (requested_by IS NOT NULL OR batch_id IS NOT NULL)
) STRICT;

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
    updated_at              TEXT NOT NULL, handed_back_by TEXT, handed_back_at TEXT
    CHECK ((handed_back_by IS NULL) = (handed_back_at IS NULL)), taken_at TEXT,
    -- someone is accountable: a person in Slack, or a customer
    CHECK (requested_by IS NOT NULL OR customer_ref IS NOT NULL),
    -- one owner exactly while taken; a resolver exactly when resolved
    CHECK ((status = 'taken') = (owner IS NOT NULL)),
    CHECK ((status = 'resolved') = (resolved_by IS NOT NULL AND resolved_at IS NOT NULL)),
    UNIQUE (agent, submission_key)
) STRICT;

CREATE TABLE "outbox" (
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

CREATE TABLE pending_counts (
    agent    TEXT PRIMARY KEY,
    pending  INTEGER NOT NULL CHECK (pending >= 0)
);

CREATE TABLE "proposals" (
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
    supersedes              TEXT REFERENCES "proposals" (id),
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
    delegation_id           TEXT REFERENCES delegations (id), batch_id TEXT REFERENCES batches (id), shown_after TEXT, urgent INTEGER NOT NULL DEFAULT 0 CHECK (urgent IN (0, 1)), backup_at TEXT, backup_roles TEXT NOT NULL DEFAULT '[]'
    CHECK (json_valid(backup_roles) AND json_type(backup_roles) = 'array'), handed_over_at TEXT, attempt INTEGER NOT NULL DEFAULT 1 CHECK (attempt >= 1), reconciled_by TEXT, reconciled_at TEXT
    CHECK ((reconciled_by IS NULL) = (reconciled_at IS NULL)), shown_at TEXT,
    UNIQUE (agent, submission_key),
    CHECK ((supersedes IS NULL) = (edited_by IS NULL)),
    CHECK ((extended_by IS NULL) = (extended_at IS NULL))
) STRICT;

CREATE TABLE "recorded_clicks" (
    id            INTEGER PRIMARY KEY AUTOINCREMENT,
    subject       TEXT NOT NULL,
    actor         TEXT NOT NULL,
    verb          TEXT NOT NULL CHECK (verb IN (
                      'approve', 'reject', 'extend', 'retry',
                      'reconcile_succeeded', 'reconcile_failed',
                      'digest_approve_all', 'digest_approve', 'digest_reject', 'digest_review',
                      'escalation_take', 'escalation_resolve', 'escalation_hand_back')),
    channel       TEXT,
    detail        TEXT NOT NULL DEFAULT '{}'
                  CHECK (json_valid(detail) AND json_type(detail) = 'object'),
    recorded_at   TEXT NOT NULL,
    leased_until  TEXT,
    attempts      INTEGER NOT NULL DEFAULT 0 CHECK (attempts >= 0),
    UNIQUE (subject, actor, verb)
);

CREATE TABLE reviews (
    proposal_id  TEXT PRIMARY KEY REFERENCES proposals (id),
    verdict      TEXT NOT NULL CHECK (verdict IN ('ok', 'should_have_asked')),
    reviewer     TEXT NOT NULL,
    at           TEXT NOT NULL
) STRICT;

CREATE TABLE schema_migrations (
    version    INTEGER PRIMARY KEY,
    name       TEXT NOT NULL,
    applied_at TEXT NOT NULL
) STRICT;

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
    revoked_at     TEXT, arguments TEXT
    CHECK (arguments IS NULL OR json_type(arguments) = 'object'), varying TEXT NOT NULL DEFAULT '[]'
    CHECK (json_type(varying) = 'array'), max_uses INTEGER NOT NULL DEFAULT 10
    CHECK (max_uses BETWEEN 1 AND 1000),
    CHECK (expires_at > created_at),
    -- contracts.standing.MAX_STANDING: 30 days (and a second's slack for julianday's floats)
    CHECK (julianday(expires_at) - julianday(created_at) <= 30.00001),
    CHECK ((revoked_by IS NULL) = (revoked_at IS NULL))
) STRICT;

CREATE INDEX audit_log_proposal_id ON audit_log (proposal_id, seq);

CREATE UNIQUE INDEX batches_one_open_per_key ON batches (key) WHERE status = 'open';

CREATE INDEX delegations_person ON delegations (person, created_at);

CREATE INDEX escalation_outbox_due ON escalation_outbox (next_attempt_at, id)
    WHERE delivered_at IS NULL AND abandoned_at IS NULL;

CREATE INDEX escalation_outbox_open ON escalation_outbox (escalation_id, lane, id)
    WHERE delivered_at IS NULL AND abandoned_at IS NULL;

CREATE INDEX escalations_open_announced ON escalations (announced_at, id) WHERE status = 'open';

CREATE INDEX escalations_open_by_agent ON escalations (agent) WHERE status = 'open';

CREATE INDEX escalations_owner ON escalations (owner, taken_at, id) WHERE status = 'taken';

CREATE INDEX outbox_due ON outbox (next_attempt_at, id)
    WHERE delivered_at IS NULL AND abandoned_at IS NULL;

CREATE INDEX outbox_due_decisions ON outbox (next_attempt_at, id)
    WHERE delivered_at IS NULL AND abandoned_at IS NULL
      AND effect IN ('slack.update', 'slack.reply');

CREATE INDEX outbox_open_by_proposal ON outbox (proposal_id, lane, id)
    WHERE delivered_at IS NULL AND abandoned_at IS NULL;

CREATE INDEX proposals_asked_by_rule ON proposals (agent, rule_id, created_at)
    WHERE decision = 'ask';

CREATE INDEX proposals_backup_due ON proposals (backup_at)
    WHERE status = 'pending' AND backup_at IS NOT NULL AND handed_over_at IS NULL;

CREATE INDEX proposals_batch_items ON proposals (batch_id) WHERE batch_id IS NOT NULL;

CREATE INDEX proposals_by_time ON proposals (created_at, id);

CREATE INDEX proposals_decided_by ON proposals (decided_by, decided_at)
    WHERE decided_by IS NOT NULL;

CREATE INDEX proposals_delegation ON proposals (delegation_id) WHERE delegation_id IS NOT NULL;

CREATE INDEX proposals_digest_items ON proposals (digest_id, created_at, id)
    WHERE digest_id IS NOT NULL;

CREATE INDEX proposals_executing_lease ON proposals (lease_until) WHERE status = 'executing';

CREATE INDEX proposals_pending_by_agent ON proposals (agent, risk_rank, expires_at, id)
    WHERE status = 'pending';

CREATE INDEX proposals_pending_by_risk ON proposals (risk_rank, expires_at, id)
    WHERE status = 'pending';

CREATE INDEX proposals_pending_queue ON proposals (channel, risk_rank, expires_at, id)
    WHERE status = 'pending';

CREATE INDEX proposals_review_sampled ON proposals (rule_id, standing_rule_id)
    WHERE review_sampled = 1;

CREATE INDEX proposals_standing_rule ON proposals (standing_rule_id)
    WHERE standing_rule_id IS NOT NULL;

CREATE INDEX proposals_status_expires_at ON proposals (status, expires_at);

CREATE INDEX proposals_unreminded ON proposals (remind_at)
    WHERE status = 'pending' AND reminded_at IS NULL AND remind_at IS NOT NULL;

CREATE INDEX proposals_unshown ON proposals (channel, operation, requested_by, created_at, id)
    WHERE status = 'pending' AND slack_ts IS NULL;

CREATE INDEX standing_rules_active ON standing_rules (operation, agent, expires_at)
    WHERE revoked_at IS NULL;

CREATE TRIGGER approvals_refuse_delete
BEFORE DELETE ON approvals
WHEN NOT EXISTS (SELECT 1 FROM archived_proposals AS a WHERE a.id = OLD.proposal_id)
BEGIN
    SELECT RAISE(ABORT, 'approvals are append-only: an approval cannot be deleted');
END;

CREATE TRIGGER approvals_refuse_update
BEFORE UPDATE ON approvals
BEGIN
    SELECT RAISE(ABORT, 'approvals are append-only: an approval cannot be changed');
END;

CREATE TRIGGER archived_proposals_refuse_delete
BEFORE DELETE ON archived_proposals
BEGIN
    SELECT RAISE(ABORT, 'archived_proposals: a record of an archived proposal cannot be deleted');
END;

CREATE TRIGGER archived_proposals_refuse_update
BEFORE UPDATE ON archived_proposals
BEGIN
    SELECT RAISE(ABORT, 'archived_proposals: a record of an archived proposal cannot be changed');
END;

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

CREATE TRIGGER audit_log_appends_to_head
BEFORE INSERT ON audit_log
WHEN NEW.seq <> (SELECT seq FROM audit_head) + 1
  OR NEW.prev_hash <> (SELECT hash FROM audit_head)
BEGIN
    SELECT RAISE(ABORT, 'audit_log: a new entry must follow the head of the chain');
END;

CREATE TRIGGER audit_log_moves_head
AFTER INSERT ON audit_log
BEGIN
    UPDATE audit_head SET seq = NEW.seq, hash = NEW.hash WHERE id = 1;
END;

CREATE TRIGGER audit_log_refuses_delete
BEFORE DELETE ON audit_log
BEGIN
    SELECT RAISE(ABORT, 'audit_log is append-only: entries cannot be deleted');
END;

CREATE TRIGGER audit_log_refuses_update
BEFORE UPDATE ON audit_log
BEGIN
    SELECT RAISE(ABORT, 'audit_log is append-only: entries cannot be changed');
END;

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

CREATE TRIGGER digests_refuse_delete
BEFORE DELETE ON digests
BEGIN
    SELECT RAISE(ABORT, 'digests: a posted digest cannot be deleted');
END;

CREATE TRIGGER digests_refuse_update
BEFORE UPDATE ON digests
BEGIN
    SELECT RAISE(ABORT, 'digests: a posted digest cannot be changed');
END;

CREATE TRIGGER escalations_report_is_frozen
BEFORE UPDATE OF id, agent, submission_key, submission_fingerprint, conversation_id,
    requested_by, customer_ref, team, summary, trigger, verdict, channel, callback_url, created_at
ON escalations
BEGIN
    SELECT RAISE(ABORT, 'escalations: what the agent reported cannot be changed');
END;

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

CREATE TRIGGER escalations_taken_at_with_its_owner
BEFORE UPDATE OF owner, taken_at ON escalations
WHEN (NEW.owner IS NULL) <> (NEW.taken_at IS NULL)
BEGIN
    SELECT RAISE(ABORT, 'escalations: taken_at is set exactly while someone owns it');
END;

CREATE TRIGGER escalations_taken_at_with_its_owner_inserted
BEFORE INSERT ON escalations
WHEN (NEW.owner IS NULL) <> (NEW.taken_at IS NULL)
BEGIN
    SELECT RAISE(ABORT, 'escalations: taken_at is set exactly while someone owns it');
END;

CREATE TRIGGER pending_counts_on_delete AFTER DELETE ON proposals
WHEN OLD.status = 'pending'
BEGIN
    UPDATE pending_counts SET pending = pending - 1 WHERE agent = OLD.agent;
END;

CREATE TRIGGER pending_counts_on_enter AFTER UPDATE OF status, agent ON proposals
WHEN NEW.status = 'pending' AND (OLD.status IS NOT 'pending' OR NEW.agent IS NOT OLD.agent)
BEGIN
    INSERT INTO pending_counts (agent, pending) VALUES (NEW.agent, 1)
    ON CONFLICT (agent) DO UPDATE SET pending = pending + 1;
END;

CREATE TRIGGER pending_counts_on_insert AFTER INSERT ON proposals
WHEN NEW.status = 'pending'
BEGIN
    INSERT INTO pending_counts (agent, pending) VALUES (NEW.agent, 1)
    ON CONFLICT (agent) DO UPDATE SET pending = pending + 1;
END;

CREATE TRIGGER pending_counts_on_leave AFTER UPDATE OF status, agent ON proposals
WHEN OLD.status = 'pending' AND (NEW.status IS NOT 'pending' OR NEW.agent IS NOT OLD.agent)
BEGIN
    UPDATE pending_counts SET pending = pending - 1 WHERE agent = OLD.agent;
END;

CREATE TRIGGER proposals_batch_of_its_channel_and_rule
BEFORE INSERT ON proposals
WHEN NEW.batch_id IS NOT NULL AND NOT EXISTS (
    SELECT 1 FROM batches AS b
    WHERE b.id = NEW.batch_id AND b.channel = NEW.channel AND b.rule_id = NEW.rule_id)
BEGIN
    SELECT RAISE(ABORT, 'proposals: a proposal joins one batch, once, of its own channel and rule');
END;

CREATE TRIGGER proposals_batch_set_once
BEFORE UPDATE OF batch_id ON proposals
WHEN NEW.batch_id IS NOT OLD.batch_id
BEGIN
    SELECT RAISE(ABORT, 'proposals: a proposal joins one batch, once, of its own channel and rule');
END;

CREATE TRIGGER proposals_contract_is_frozen
BEFORE UPDATE OF id, agent, submission_key, submission_fingerprint, requested_by, run_id,
    operation, request, arguments, preview, binding_hash, agent_reason, callback_url, rule_id,
    decision, policy_note, approver_roles, channel, created_at, risk, quorum, supersedes,
    edited_by
ON proposals
BEGIN
    SELECT RAISE(ABORT, 'proposals: the frozen contract of a proposal cannot be changed');
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

CREATE TRIGGER proposals_delegation_is_frozen
BEFORE UPDATE OF delegation_id ON proposals
WHEN NEW.delegation_id IS NOT OLD.delegation_id
BEGIN
    SELECT RAISE(ABORT, 'proposals: the delegation of a proposal is frozen');
END;

CREATE TRIGGER proposals_digest_items_match
BEFORE UPDATE OF digest_id, slack_channel, slack_ts ON proposals
WHEN (OLD.digest_id IS NOT NULL AND NEW.digest_id IS NOT OLD.digest_id)
  OR (NEW.digest_id IS NOT NULL AND NOT EXISTS (
        SELECT 1 FROM digests AS d
        WHERE d.id = NEW.digest_id AND d.operation = NEW.operation
          AND d.channel = NEW.slack_channel AND d.ts = NEW.slack_ts
          AND (d.requested_by IS NULL OR d.requested_by = NEW.requested_by)
          AND (d.batch_id IS NULL OR d.batch_id = NEW.batch_id)))
BEGIN
    SELECT RAISE(ABORT, 'proposals: a digest item stays in its digest, shown by its message, and shares its operation and requester or batch');
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

CREATE TRIGGER proposals_removed_only_when_archived
BEFORE DELETE ON proposals
WHEN NOT EXISTS (SELECT 1 FROM archived_proposals AS a WHERE a.id = OLD.id)
BEGIN
    SELECT RAISE(ABORT, 'proposals: only an archived proposal can be removed');
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

CREATE TRIGGER reviews_only_of_sampled_proposals
BEFORE INSERT ON reviews
WHEN NOT EXISTS (SELECT 1 FROM proposals WHERE id = NEW.proposal_id AND review_sampled = 1)
BEGIN
    SELECT RAISE(ABORT, 'reviews: only a proposal sampled for review can be reviewed');
END;

CREATE TRIGGER reviews_refuse_delete
BEFORE DELETE ON reviews
WHEN NOT EXISTS (SELECT 1 FROM archived_proposals AS a WHERE a.id = OLD.proposal_id)
BEGIN
    SELECT RAISE(ABORT, 'reviews are append-only: a verdict cannot be deleted');
END;

CREATE TRIGGER reviews_refuse_update
BEFORE UPDATE ON reviews
BEGIN
    SELECT RAISE(ABORT, 'reviews are append-only: a verdict cannot be changed');
END;

CREATE TRIGGER standing_rules_only_revocation_changes
BEFORE UPDATE ON standing_rules
WHEN NEW.id IS NOT OLD.id OR NEW.operation IS NOT OLD.operation OR NEW.agent IS NOT OLD.agent
  OR NEW.rule_id IS NOT OLD.rule_id OR NEW.ceiling_field IS NOT OLD.ceiling_field
  OR NEW.ceiling IS NOT OLD.ceiling OR NEW.created_by IS NOT OLD.created_by
  OR NEW.created_from IS NOT OLD.created_from OR NEW.created_at IS NOT OLD.created_at
  OR NEW.expires_at IS NOT OLD.expires_at OR NEW.arguments IS NOT OLD.arguments
  OR NEW.varying IS NOT OLD.varying OR NEW.max_uses IS NOT OLD.max_uses
  OR OLD.revoked_at IS NOT NULL OR NEW.revoked_at IS NULL
BEGIN
    SELECT RAISE(ABORT, 'standing_rules: a grant cannot be changed, only revoked once');
END;

CREATE TRIGGER standing_rules_refuse_delete
BEFORE DELETE ON standing_rules
BEGIN
    SELECT RAISE(ABORT, 'standing_rules: a grant cannot be deleted; revoke it');
END;
