-- The PostgreSQL schema as migrations 0001..0032 leave it: for reading, never applied.
-- Written by `python -m store.schema --write` (tests/store/test_schema.py checks it is current).
-- To change the schema, add a migration (docs/store.md says how), then write this file again.

CREATE TABLE approvals (
    proposal_id text NOT NULL,
    approver text NOT NULL,
    binding_hash text NOT NULL,
    approved_at timestamp with time zone NOT NULL,
    CONSTRAINT approvals_pkey PRIMARY KEY (proposal_id, approver),
    CONSTRAINT approvals_proposal_id_fkey FOREIGN KEY (proposal_id) REFERENCES proposals(id)
);

CREATE TABLE archived_proposals (
    id text NOT NULL,
    archived_at timestamp with time zone NOT NULL,
    archive text NOT NULL,
    CONSTRAINT archived_proposals_pkey PRIMARY KEY (id)
);

CREATE TABLE audit_head (
    id integer NOT NULL,
    seq bigint NOT NULL,
    hash text NOT NULL,
    CONSTRAINT audit_head_id_check CHECK ((id = 1)),
    CONSTRAINT audit_head_pkey PRIMARY KEY (id),
    CONSTRAINT audit_head_seq_check CHECK ((seq >= 0))
);

CREATE TABLE audit_log (
    seq bigint,
    at timestamp with time zone NOT NULL,
    proposal_id text,
    actor text NOT NULL,
    event text NOT NULL,
    detail json NOT NULL,
    prev_hash text,
    hash text,
    id bigint NOT NULL,
    CONSTRAINT audit_log_detail_check CHECK ((json_typeof(detail) = 'object'::text)),
    CONSTRAINT audit_log_pkey PRIMARY KEY (id),
    CONSTRAINT audit_log_sealed_whole CHECK ((((seq IS NULL) = (prev_hash IS NULL)) AND ((seq IS NULL) = (hash IS NULL)))),
    CONSTRAINT audit_log_seq_check CHECK ((seq >= 1)),
    CONSTRAINT audit_log_seq_key UNIQUE (seq)
);

CREATE TABLE batches (
    id text NOT NULL,
    key text NOT NULL,
    channel text NOT NULL,
    rule_id text NOT NULL,
    opened_at timestamp with time zone NOT NULL,
    closes_at timestamp with time zone NOT NULL,
    max_size integer NOT NULL,
    size integer NOT NULL DEFAULT 0,
    status text NOT NULL DEFAULT 'open'::text,
    leased_until timestamp with time zone,
    CONSTRAINT batches_check CHECK (((size >= 0) AND (size <= max_size))),
    CONSTRAINT batches_max_size_check CHECK (((max_size >= 1) AND (max_size <= 50))),
    CONSTRAINT batches_pkey PRIMARY KEY (id),
    CONSTRAINT batches_status_check CHECK ((status = ANY (ARRAY['open'::text, 'closed'::text, 'posted'::text])))
);

CREATE TABLE delegations (
    id text NOT NULL,
    token_hash text NOT NULL,
    agent text NOT NULL,
    person text NOT NULL,
    created_at timestamp with time zone NOT NULL,
    expires_at timestamp with time zone NOT NULL,
    revoked_by text,
    revoked_at timestamp with time zone,
    CONSTRAINT delegations_expire_after_creation CHECK ((expires_at > created_at)),
    CONSTRAINT delegations_last_at_most_7_days CHECK ((expires_at <= (created_at + '7 days'::interval))),
    CONSTRAINT delegations_pkey PRIMARY KEY (id),
    CONSTRAINT delegations_revocation_is_complete CHECK (((revoked_by IS NULL) = (revoked_at IS NULL))),
    CONSTRAINT delegations_token_hash_check CHECK ((length(token_hash) = 64)),
    CONSTRAINT delegations_token_hash_key UNIQUE (token_hash)
);

CREATE TABLE digests (
    id text NOT NULL,
    channel text NOT NULL,
    ts text NOT NULL,
    operation text NOT NULL,
    requested_by text,
    created_at timestamp with time zone NOT NULL,
    batch_id text,
    CONSTRAINT digests_batch_id_fkey FOREIGN KEY (batch_id) REFERENCES batches(id),
    CONSTRAINT digests_one_per_message UNIQUE (channel, ts),
    CONSTRAINT digests_pkey PRIMARY KEY (id),
    CONSTRAINT digests_requester_or_batch CHECK (((requested_by IS NOT NULL) OR (batch_id IS NOT NULL)))
);

CREATE TABLE escalation_outbox (
    id bigint NOT NULL,
    escalation_id text NOT NULL,
    effect text NOT NULL,
    lane text NOT NULL,
    status text NOT NULL,
    reannounce boolean NOT NULL DEFAULT false,
    created_at timestamp with time zone NOT NULL,
    attempts integer NOT NULL DEFAULT 0,
    next_attempt_at timestamp with time zone NOT NULL,
    leased_until timestamp with time zone,
    delivered_at timestamp with time zone,
    abandoned_at timestamp with time zone,
    last_error text,
    CONSTRAINT escalation_outbox_attempts_check CHECK ((attempts >= 0)),
    CONSTRAINT escalation_outbox_effect_check CHECK ((effect = ANY (ARRAY['slack.post'::text, 'slack.update'::text, 'slack.reply'::text, 'callback'::text]))),
    CONSTRAINT escalation_outbox_escalation_id_fkey FOREIGN KEY (escalation_id) REFERENCES escalations(id),
    CONSTRAINT escalation_outbox_lane_check CHECK ((lane = ANY (ARRAY['slack'::text, 'callback'::text]))),
    CONSTRAINT escalation_outbox_pkey PRIMARY KEY (id),
    CONSTRAINT escalation_outbox_status_check CHECK ((status = ANY (ARRAY['open'::text, 'taken'::text, 'handed_back'::text, 'resolved'::text])))
);

CREATE TABLE escalations (
    id text NOT NULL,
    agent text NOT NULL,
    submission_key text NOT NULL,
    submission_fingerprint text NOT NULL,
    conversation_id text NOT NULL,
    requested_by text,
    customer_ref text,
    team text,
    summary json NOT NULL,
    trigger json NOT NULL,
    verdict json NOT NULL,
    channel text NOT NULL,
    callback_url text,
    created_at timestamp with time zone NOT NULL,
    status text NOT NULL,
    owner text,
    note text,
    resolved_by text,
    resolved_at timestamp with time zone,
    announced_at timestamp with time zone NOT NULL,
    reannouncements integer NOT NULL DEFAULT 0,
    slack_channel text,
    slack_ts text,
    updated_at timestamp with time zone NOT NULL,
    handed_back_by text,
    handed_back_at timestamp with time zone,
    taken_at timestamp with time zone,
    CONSTRAINT escalations_hand_back_names_its_person CHECK (((handed_back_by IS NULL) = (handed_back_at IS NULL))),
    CONSTRAINT escalations_one_owner_while_taken CHECK (((status = 'taken'::text) = (owner IS NOT NULL))),
    CONSTRAINT escalations_one_per_submission_key UNIQUE (agent, submission_key),
    CONSTRAINT escalations_pkey PRIMARY KEY (id),
    CONSTRAINT escalations_reannouncements_check CHECK ((reannouncements >= 0)),
    CONSTRAINT escalations_resolver_when_resolved CHECK (((status = 'resolved'::text) = ((resolved_by IS NOT NULL) AND (resolved_at IS NOT NULL)))),
    CONSTRAINT escalations_someone_is_accountable CHECK (((requested_by IS NOT NULL) OR (customer_ref IS NOT NULL))),
    CONSTRAINT escalations_status_is_a_lifecycle_status CHECK ((status = ANY (ARRAY['open'::text, 'taken'::text, 'handed_back'::text, 'resolved'::text]))),
    CONSTRAINT escalations_summary_check CHECK ((json_typeof(summary) = 'object'::text)),
    CONSTRAINT escalations_taken_at_with_its_owner CHECK (((owner IS NULL) = (taken_at IS NULL))),
    CONSTRAINT escalations_trigger_check CHECK ((json_typeof(trigger) = 'object'::text)),
    CONSTRAINT escalations_verdict_check CHECK ((json_typeof(verdict) = 'object'::text))
);

CREATE TABLE outbox (
    id bigint NOT NULL,
    proposal_id text NOT NULL,
    effect text NOT NULL,
    lane text NOT NULL,
    status text NOT NULL,
    created_at timestamp with time zone NOT NULL,
    attempts integer NOT NULL DEFAULT 0,
    next_attempt_at timestamp with time zone NOT NULL,
    leased_until timestamp with time zone,
    delivered_at timestamp with time zone,
    abandoned_at timestamp with time zone,
    last_error text,
    CONSTRAINT outbox_attempts_check CHECK ((attempts >= 0)),
    CONSTRAINT outbox_effect_is_an_effect CHECK ((effect = ANY (ARRAY['slack.post'::text, 'slack.update'::text, 'slack.reply'::text, 'slack.remind'::text, 'slack.review'::text, 'callback'::text]))),
    CONSTRAINT outbox_lane_check CHECK ((lane = ANY (ARRAY['slack'::text, 'callback'::text]))),
    CONSTRAINT outbox_pkey PRIMARY KEY (id),
    CONSTRAINT outbox_proposal_id_fkey FOREIGN KEY (proposal_id) REFERENCES proposals(id)
);

CREATE TABLE pending_count_changes (
    tx bigint NOT NULL,
    agent text NOT NULL,
    shard smallint NOT NULL,
    change smallint NOT NULL,
    CONSTRAINT pending_count_changes_change_check CHECK ((change = ANY (ARRAY['-1'::integer, 1]))),
    CONSTRAINT pending_counts_at_commit TRIGGER DEFERRABLE INITIALLY DEFERRED
);

CREATE TABLE pending_counts (
    agent text NOT NULL,
    shard smallint NOT NULL,
    pending bigint NOT NULL,
    CONSTRAINT pending_counts_pending_check CHECK ((pending >= 0)),
    CONSTRAINT pending_counts_pkey PRIMARY KEY (agent, shard),
    CONSTRAINT pending_counts_shard_check CHECK (((shard >= 0) AND (shard <= 7)))
);

CREATE TABLE proposals (
    id text NOT NULL,
    agent text NOT NULL,
    submission_key text NOT NULL,
    submission_fingerprint text NOT NULL,
    requested_by text NOT NULL,
    run_id text,
    operation text NOT NULL,
    request json NOT NULL,
    arguments json NOT NULL,
    preview json NOT NULL,
    binding_hash text NOT NULL,
    agent_reason text,
    callback_url text,
    rule_id text,
    decision text NOT NULL,
    policy_note text NOT NULL,
    approver_roles text[] NOT NULL DEFAULT '{}'::text[],
    channel text,
    status text NOT NULL,
    created_at timestamp with time zone NOT NULL,
    expires_at timestamp with time zone,
    slack_channel text,
    slack_ts text,
    decided_by text,
    decided_at timestamp with time zone,
    decision_note text,
    outcome json,
    updated_at timestamp with time zone NOT NULL,
    lease_until timestamp with time zone,
    risk text NOT NULL DEFAULT 'irreversible'::text,
    risk_rank smallint DEFAULT 
CASE risk
    WHEN 'irreversible'::text THEN 0
    WHEN 'reversible'::text THEN 1
    ELSE 2
END,
    quorum smallint NOT NULL DEFAULT 1,
    supersedes text,
    edited_by text,
    superseded_by text,
    remind_at timestamp with time zone,
    reminded_at timestamp with time zone,
    extended_by text,
    extended_at timestamp with time zone,
    standing_rule_id text,
    review_sampled boolean NOT NULL DEFAULT false,
    digest_id text,
    delegation_id text,
    batch_id text,
    shown_after timestamp with time zone,
    urgent boolean NOT NULL DEFAULT false,
    backup_at timestamp with time zone,
    backup_roles text[] NOT NULL DEFAULT '{}'::text[],
    handed_over_at timestamp with time zone,
    attempt integer NOT NULL DEFAULT 1,
    reconciled_by text,
    reconciled_at timestamp with time zone,
    shown_at timestamp with time zone,
    CONSTRAINT proposals_arguments_check CHECK ((json_typeof(arguments) = 'object'::text)),
    CONSTRAINT proposals_attempt_check CHECK ((attempt >= 1)),
    CONSTRAINT proposals_batch_id_fkey FOREIGN KEY (batch_id) REFERENCES batches(id),
    CONSTRAINT proposals_decision_check CHECK ((decision = ANY (ARRAY['auto'::text, 'ask'::text, 'deny'::text]))),
    CONSTRAINT proposals_delegation_id_fkey FOREIGN KEY (delegation_id) REFERENCES delegations(id),
    CONSTRAINT proposals_digest_id_fkey FOREIGN KEY (digest_id) REFERENCES digests(id),
    CONSTRAINT proposals_edit_names_its_editor CHECK (((supersedes IS NULL) = (edited_by IS NULL))),
    CONSTRAINT proposals_extension_is_complete CHECK (((extended_by IS NULL) = (extended_at IS NULL))),
    CONSTRAINT proposals_one_per_submission_key UNIQUE (agent, submission_key),
    CONSTRAINT proposals_outcome_check CHECK (((outcome IS NULL) OR (json_typeof(outcome) = 'object'::text))),
    CONSTRAINT proposals_pkey PRIMARY KEY (id),
    CONSTRAINT proposals_preview_check CHECK ((json_typeof(preview) = 'object'::text)),
    CONSTRAINT proposals_quorum_check CHECK (((quorum >= 1) AND (quorum <= 20))),
    CONSTRAINT proposals_reconciliation_names_its_person CHECK (((reconciled_by IS NULL) = (reconciled_at IS NULL))),
    CONSTRAINT proposals_risk_check CHECK ((risk = ANY (ARRAY['read'::text, 'reversible'::text, 'irreversible'::text]))),
    CONSTRAINT proposals_standing_rule_id_fkey FOREIGN KEY (standing_rule_id) REFERENCES standing_rules(id),
    CONSTRAINT proposals_status_is_a_lifecycle_status CHECK ((status = ANY (ARRAY['pending'::text, 'denied'::text, 'rejected'::text, 'expired'::text, 'executing'::text, 'succeeded'::text, 'needs_reconciliation'::text, 'revision_required'::text, 'failed'::text, 'superseded'::text, 'cancelled'::text]))),
    CONSTRAINT proposals_supersedes_fkey FOREIGN KEY (supersedes) REFERENCES proposals(id)
);

CREATE TABLE recorded_clicks (
    id bigint NOT NULL,
    subject text NOT NULL,
    actor text NOT NULL,
    verb text NOT NULL,
    channel text,
    recorded_at timestamp with time zone NOT NULL,
    leased_until timestamp with time zone,
    detail json NOT NULL DEFAULT '{}'::json,
    attempts integer NOT NULL DEFAULT 0,
    CONSTRAINT recorded_clicks_attempts_check CHECK ((attempts >= 0)),
    CONSTRAINT recorded_clicks_detail_check CHECK ((json_typeof(detail) = 'object'::text)),
    CONSTRAINT recorded_clicks_pkey PRIMARY KEY (id),
    CONSTRAINT recorded_clicks_subject_actor_verb_key UNIQUE (subject, actor, verb),
    CONSTRAINT recorded_clicks_verb_check CHECK ((verb = ANY (ARRAY['approve'::text, 'reject'::text, 'extend'::text, 'retry'::text, 'reconcile_succeeded'::text, 'reconcile_failed'::text, 'digest_approve_all'::text, 'digest_approve'::text, 'digest_reject'::text, 'digest_review'::text, 'escalation_take'::text, 'escalation_resolve'::text, 'escalation_hand_back'::text])))
);

CREATE TABLE reviews (
    proposal_id text NOT NULL,
    verdict text NOT NULL,
    reviewer text NOT NULL,
    at timestamp with time zone NOT NULL,
    CONSTRAINT reviews_pkey PRIMARY KEY (proposal_id),
    CONSTRAINT reviews_proposal_id_fkey FOREIGN KEY (proposal_id) REFERENCES proposals(id),
    CONSTRAINT reviews_verdict_check CHECK ((verdict = ANY (ARRAY['ok'::text, 'should_have_asked'::text])))
);

CREATE TABLE schema_migrations (
    version integer NOT NULL,
    name text NOT NULL,
    applied_at timestamp with time zone NOT NULL DEFAULT now(),
    CONSTRAINT schema_migrations_pkey PRIMARY KEY (version)
);

CREATE TABLE standing_rules (
    id text NOT NULL,
    operation text NOT NULL,
    agent text NOT NULL,
    rule_id text NOT NULL,
    ceiling_field text NOT NULL,
    ceiling numeric NOT NULL,
    created_by text NOT NULL,
    created_from text NOT NULL,
    created_at timestamp with time zone NOT NULL,
    expires_at timestamp with time zone NOT NULL,
    revoked_by text,
    revoked_at timestamp with time zone,
    arguments json,
    varying text[] NOT NULL DEFAULT '{}'::text[],
    max_uses integer NOT NULL DEFAULT 10,
    CONSTRAINT standing_rules_arguments_are_an_object CHECK (((arguments IS NULL) OR (json_typeof(arguments) = 'object'::text))),
    CONSTRAINT standing_rules_created_from_fkey FOREIGN KEY (created_from) REFERENCES proposals(id),
    CONSTRAINT standing_rules_created_from_key UNIQUE (created_from),
    CONSTRAINT standing_rules_expire_after_creation CHECK ((expires_at > created_at)),
    CONSTRAINT standing_rules_last_at_most_30_days CHECK ((expires_at <= (created_at + '30 days'::interval))),
    CONSTRAINT standing_rules_max_uses_in_range CHECK (((max_uses >= 1) AND (max_uses <= 1000))),
    CONSTRAINT standing_rules_pkey PRIMARY KEY (id),
    CONSTRAINT standing_rules_revocation_is_complete CHECK (((revoked_by IS NULL) = (revoked_at IS NULL)))
);

CREATE UNIQUE INDEX approvals_pkey ON approvals USING btree (proposal_id, approver);

CREATE UNIQUE INDEX archived_proposals_pkey ON archived_proposals USING btree (id);

CREATE UNIQUE INDEX audit_head_pkey ON audit_head USING btree (id);

CREATE UNIQUE INDEX audit_log_pkey ON audit_log USING btree (id);

CREATE INDEX audit_log_proposal_id ON audit_log USING btree (proposal_id, seq);

CREATE UNIQUE INDEX audit_log_seq_key ON audit_log USING btree (seq);

CREATE INDEX audit_log_unsealed ON audit_log USING btree (id) WHERE (seq IS NULL);

CREATE UNIQUE INDEX batches_one_open_per_key ON batches USING btree (key) WHERE (status = 'open'::text);

CREATE UNIQUE INDEX batches_pkey ON batches USING btree (id);

CREATE INDEX delegations_person ON delegations USING btree (person, created_at);

CREATE UNIQUE INDEX delegations_pkey ON delegations USING btree (id);

CREATE UNIQUE INDEX delegations_token_hash_key ON delegations USING btree (token_hash);

CREATE UNIQUE INDEX digests_one_per_message ON digests USING btree (channel, ts);

CREATE UNIQUE INDEX digests_pkey ON digests USING btree (id);

CREATE INDEX escalation_outbox_due ON escalation_outbox USING btree (next_attempt_at, id) WHERE ((delivered_at IS NULL) AND (abandoned_at IS NULL));

CREATE INDEX escalation_outbox_open ON escalation_outbox USING btree (escalation_id, lane, id) WHERE ((delivered_at IS NULL) AND (abandoned_at IS NULL));

CREATE UNIQUE INDEX escalation_outbox_pkey ON escalation_outbox USING btree (id);

CREATE UNIQUE INDEX escalations_one_per_submission_key ON escalations USING btree (agent, submission_key);

CREATE INDEX escalations_open_announced ON escalations USING btree (announced_at, id) WHERE (status = 'open'::text);

CREATE INDEX escalations_open_by_agent ON escalations USING btree (agent) WHERE (status = 'open'::text);

CREATE INDEX escalations_owner ON escalations USING btree (owner, taken_at, id) WHERE (status = 'taken'::text);

CREATE UNIQUE INDEX escalations_pkey ON escalations USING btree (id);

CREATE INDEX outbox_due ON outbox USING btree (next_attempt_at, id) WHERE ((delivered_at IS NULL) AND (abandoned_at IS NULL));

CREATE INDEX outbox_due_decisions ON outbox USING btree (next_attempt_at, id) WHERE ((delivered_at IS NULL) AND (abandoned_at IS NULL) AND (effect = ANY (ARRAY['slack.update'::text, 'slack.reply'::text])));

CREATE INDEX outbox_open_by_proposal ON outbox USING btree (proposal_id, lane, id) WHERE ((delivered_at IS NULL) AND (abandoned_at IS NULL));

CREATE UNIQUE INDEX outbox_pkey ON outbox USING btree (id);

CREATE INDEX pending_count_changes_tx ON pending_count_changes USING btree (tx);

CREATE UNIQUE INDEX pending_counts_pkey ON pending_counts USING btree (agent, shard);

CREATE INDEX proposals_asked_by_rule ON proposals USING btree (agent, rule_id, created_at) WHERE (decision = 'ask'::text);

CREATE INDEX proposals_backup_due ON proposals USING btree (backup_at) WHERE ((status = 'pending'::text) AND (backup_at IS NOT NULL) AND (handed_over_at IS NULL));

CREATE INDEX proposals_batch_items ON proposals USING btree (batch_id) WHERE (batch_id IS NOT NULL);

CREATE INDEX proposals_by_time ON proposals USING btree (created_at, id);

CREATE INDEX proposals_decided_by ON proposals USING btree (decided_by, decided_at) WHERE (decided_by IS NOT NULL);

CREATE INDEX proposals_delegation ON proposals USING btree (delegation_id) WHERE (delegation_id IS NOT NULL);

CREATE INDEX proposals_digest_items ON proposals USING btree (digest_id, created_at, id) WHERE (digest_id IS NOT NULL);

CREATE INDEX proposals_executing_lease ON proposals USING btree (lease_until) WHERE (status = 'executing'::text);

CREATE UNIQUE INDEX proposals_one_per_submission_key ON proposals USING btree (agent, submission_key);

CREATE INDEX proposals_pending_by_agent ON proposals USING btree (agent, risk_rank, expires_at, id) WHERE (status = 'pending'::text);

CREATE INDEX proposals_pending_by_risk ON proposals USING btree (risk_rank, expires_at, id) WHERE (status = 'pending'::text);

CREATE INDEX proposals_pending_queue ON proposals USING btree (channel, risk_rank, expires_at, id) WHERE (status = 'pending'::text);

CREATE UNIQUE INDEX proposals_pkey ON proposals USING btree (id);

CREATE INDEX proposals_review_sampled ON proposals USING btree (rule_id, standing_rule_id) WHERE review_sampled;

CREATE INDEX proposals_standing_rule ON proposals USING btree (standing_rule_id) WHERE (standing_rule_id IS NOT NULL);

CREATE INDEX proposals_status_expires_at ON proposals USING btree (status, expires_at);

CREATE INDEX proposals_unreminded ON proposals USING btree (remind_at) WHERE ((status = 'pending'::text) AND (reminded_at IS NULL) AND (remind_at IS NOT NULL));

CREATE INDEX proposals_unshown ON proposals USING btree (channel, operation, requested_by, created_at, id) WHERE ((status = 'pending'::text) AND (slack_ts IS NULL));

CREATE UNIQUE INDEX recorded_clicks_pkey ON recorded_clicks USING btree (id);

CREATE UNIQUE INDEX recorded_clicks_subject_actor_verb_key ON recorded_clicks USING btree (subject, actor, verb);

CREATE UNIQUE INDEX reviews_pkey ON reviews USING btree (proposal_id);

CREATE UNIQUE INDEX schema_migrations_pkey ON schema_migrations USING btree (version);

CREATE INDEX standing_rules_active ON standing_rules USING btree (operation, agent, expires_at) WHERE (revoked_at IS NULL);

CREATE UNIQUE INDEX standing_rules_created_from_key ON standing_rules USING btree (created_from);

CREATE UNIQUE INDEX standing_rules_pkey ON standing_rules USING btree (id);

CREATE OR REPLACE FUNCTION approvals_are_append_only()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
BEGIN
    RAISE EXCEPTION 'approvals are append-only: an approval cannot be changed or deleted'
        USING ERRCODE = 'integrity_constraint_violation';
END;
$function$;

CREATE OR REPLACE FUNCTION archived_proposals_are_written_once()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
BEGIN
    RAISE EXCEPTION 'archived_proposals: a record of an archived proposal cannot be changed or deleted (%)', TG_OP
        USING ERRCODE = 'integrity_constraint_violation';
END;
$function$;

CREATE OR REPLACE FUNCTION audit_head_moves_forward()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
BEGIN
    IF TG_OP <> 'UPDATE' OR NEW.id <> OLD.id OR NEW.seq <> OLD.seq + 1 THEN
        RAISE EXCEPTION 'audit_head only moves forward with an appended entry (%)', TG_OP
            USING ERRCODE = 'integrity_constraint_violation';
    END IF;
    RETURN NEW;
END;
$function$;

CREATE OR REPLACE FUNCTION audit_log_is_append_only()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
BEGIN
    IF TG_OP = 'UPDATE' THEN  -- OLD and NEW exist only for row changes
        IF OLD.seq IS NULL AND NEW.seq IS NOT NULL
           AND NEW.id = OLD.id
           AND NEW.at = OLD.at
           AND NEW.proposal_id IS NOT DISTINCT FROM OLD.proposal_id
           AND NEW.actor = OLD.actor
           AND NEW.event = OLD.event
           AND NEW.detail::text = OLD.detail::text THEN
            RETURN NEW;
        END IF;
    END IF;
    RAISE EXCEPTION 'audit_log is append-only: entries cannot be changed or deleted (%)', TG_OP
        USING ERRCODE = 'integrity_constraint_violation';
END;
$function$;

CREATE OR REPLACE FUNCTION audit_log_sealed_at_head()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
DECLARE
    head audit_head%ROWTYPE;
BEGIN
    IF NEW.seq IS NULL THEN
        RETURN NEW;  -- appended unsealed
    END IF;
    IF TG_OP = 'UPDATE' AND OLD.seq IS NOT NULL THEN
        RETURN NEW;  -- not a seal: audit_log_refuses_update_and_delete refuses it
    END IF;
    SELECT * INTO head FROM audit_head WHERE id = 1 FOR UPDATE;
    IF NOT FOUND OR NEW.seq <> head.seq + 1 OR NEW.prev_hash IS DISTINCT FROM head.hash THEN
        RAISE EXCEPTION 'audit_log: a sealed entry must follow the head of the chain'
            USING ERRCODE = 'integrity_constraint_violation';
    END IF;
    UPDATE audit_head SET seq = NEW.seq, hash = NEW.hash WHERE id = 1;
    RETURN NEW;
END;
$function$;

CREATE OR REPLACE FUNCTION delegations_only_revocation_changes()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
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
$function$;

CREATE OR REPLACE FUNCTION digests_are_written_once()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
BEGIN
    RAISE EXCEPTION 'digests: a posted digest cannot be changed or deleted'
        USING ERRCODE = 'integrity_constraint_violation';
END;
$function$;

CREATE OR REPLACE FUNCTION escalations_report_is_frozen()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
BEGIN
    RAISE EXCEPTION 'escalations: what the agent reported cannot be changed'
        USING ERRCODE = 'integrity_constraint_violation';
END;
$function$;

CREATE OR REPLACE FUNCTION escalations_status_follows_lifecycle()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
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
$function$;

CREATE OR REPLACE FUNCTION pending_counts_apply()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
DECLARE
    due record;
BEGIN
    IF current_setting('countersign.pending_count_changes', true) IS DISTINCT FROM 'noted' THEN
        RETURN NULL;  -- an earlier trigger of this transaction applied them
    END IF;
    PERFORM set_config('countersign.pending_count_changes', 'applied', true);
    FOR due IN
        WITH taken AS (
            DELETE FROM pending_count_changes WHERE tx = txid_current()
            RETURNING agent, shard, change
        )
        SELECT agent, shard, sum(change) AS change FROM taken
        GROUP BY agent, shard HAVING sum(change) <> 0
        ORDER BY agent COLLATE "C", shard
    LOOP
        IF due.change > 0 THEN
            INSERT INTO pending_counts (agent, shard, pending)
            VALUES (due.agent, due.shard, due.change)
            ON CONFLICT (agent, shard) DO UPDATE SET pending = pending_counts.pending + due.change;
        ELSE
            UPDATE pending_counts SET pending = pending + due.change
            WHERE agent = due.agent AND shard = due.shard;
        END IF;
    END LOOP;
    RETURN NULL;
END;
$function$;

CREATE OR REPLACE FUNCTION pending_counts_note()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
BEGIN
    IF TG_OP IN ('UPDATE', 'DELETE') AND OLD.status = 'pending' THEN
        INSERT INTO pending_count_changes (tx, agent, shard, change)
        VALUES (txid_current(), OLD.agent, pending_counts_shard(OLD.id), -1);
    END IF;
    IF TG_OP IN ('INSERT', 'UPDATE') AND NEW.status = 'pending' THEN
        INSERT INTO pending_count_changes (tx, agent, shard, change)
        VALUES (txid_current(), NEW.agent, pending_counts_shard(NEW.id), 1);
    END IF;
    -- Transaction-local (and undone with a rolled back savepoint, as the notes are).
    PERFORM set_config('countersign.pending_count_changes', 'noted', true);
    RETURN NULL;
END;
$function$;

CREATE OR REPLACE FUNCTION pending_counts_shard(proposal_id text)
 RETURNS smallint
 LANGUAGE sql
 IMMUTABLE PARALLEL SAFE
AS $function$ SELECT (get_byte(decode(md5(proposal_id), 'hex'), 0) % 8)::smallint $function$;

CREATE OR REPLACE FUNCTION proposals_batch_set_once()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
BEGIN
    IF (TG_OP = 'UPDATE' AND NEW.batch_id IS DISTINCT FROM OLD.batch_id)
       OR (TG_OP = 'INSERT' AND NEW.batch_id IS NOT NULL AND NOT EXISTS (
            SELECT 1 FROM batches AS b
            WHERE b.id = NEW.batch_id AND b.channel = NEW.channel AND b.rule_id = NEW.rule_id))
    THEN
        RAISE EXCEPTION 'proposals: a proposal joins one batch, once, of its own channel and rule'
            USING ERRCODE = 'integrity_constraint_violation';
    END IF;
    RETURN NEW;
END;
$function$;

CREATE OR REPLACE FUNCTION proposals_contract_is_frozen()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
BEGIN
    RAISE EXCEPTION 'proposals: the frozen contract of a proposal cannot be changed'
        USING ERRCODE = 'integrity_constraint_violation';
END;
$function$;

CREATE OR REPLACE FUNCTION proposals_delegation_covers()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
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
$function$;

CREATE OR REPLACE FUNCTION proposals_delegation_is_frozen()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
BEGIN
    IF NEW.delegation_id IS DISTINCT FROM OLD.delegation_id THEN
        RAISE EXCEPTION 'proposals: the delegation of a proposal is frozen'
            USING ERRCODE = 'integrity_constraint_violation';
    END IF;
    RETURN NEW;
END;
$function$;

CREATE OR REPLACE FUNCTION proposals_digest_items_match()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
BEGIN
    IF (OLD.digest_id IS NOT NULL AND NEW.digest_id IS DISTINCT FROM OLD.digest_id)
       OR (NEW.digest_id IS NOT NULL AND NOT EXISTS (
            SELECT 1 FROM digests AS d
            WHERE d.id = NEW.digest_id AND d.operation = NEW.operation
              AND d.channel = NEW.slack_channel AND d.ts = NEW.slack_ts
              AND (d.requested_by IS NULL OR d.requested_by = NEW.requested_by)
              AND (d.batch_id IS NULL OR d.batch_id = NEW.batch_id)))
    THEN
        RAISE EXCEPTION 'proposals: a digest item stays in its digest, shown by its message, and shares its operation and requester or batch'
            USING ERRCODE = 'integrity_constraint_violation';
    END IF;
    RETURN NEW;
END;
$function$;

CREATE OR REPLACE FUNCTION proposals_expiry_extends_once()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
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
$function$;

CREATE OR REPLACE FUNCTION proposals_notify_change()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
BEGIN
    PERFORM pg_notify('countersign_' || left(md5(current_schema()), 16), NEW.id);
    RETURN NULL;
END;
$function$;

CREATE OR REPLACE FUNCTION proposals_standing_is_frozen()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
BEGIN
    IF NEW.standing_rule_id IS DISTINCT FROM OLD.standing_rule_id
       OR NEW.review_sampled IS DISTINCT FROM OLD.review_sampled
    THEN
        RAISE EXCEPTION 'proposals: the standing rule and review sample of a proposal are frozen'
            USING ERRCODE = 'integrity_constraint_violation';
    END IF;
    RETURN NEW;
END;
$function$;

CREATE OR REPLACE FUNCTION proposals_standing_rule_covers()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
BEGIN
    IF NEW.standing_rule_id IS NULL THEN
        RETURN NEW;
    END IF;
    -- One use of a grant at a time: wait for the other uses' transactions, then count in a new
    -- statement (READ COMMITTED: a new snapshot, which sees the uses committed meanwhile). The
    -- lock also keeps a revocation from committing between this check and the insert's commit.
    PERFORM 1 FROM standing_rules WHERE id = NEW.standing_rule_id FOR NO KEY UPDATE;
    IF NEW.decision <> 'auto' OR NEW.status <> 'executing' OR NOT EXISTS (
        SELECT 1 FROM standing_rules AS s
        WHERE s.id = NEW.standing_rule_id
          AND s.operation = NEW.operation AND s.agent = NEW.agent AND s.rule_id = NEW.rule_id
          AND s.created_by <> NEW.requested_by
          AND s.revoked_at IS NULL AND s.expires_at > NEW.created_at
          AND json_typeof(NEW.arguments -> s.ceiling_field) = 'number'
          AND (NEW.arguments ->> s.ceiling_field)::numeric <= s.ceiling
          AND s.arguments IS NOT NULL
          AND (NEW.arguments::jsonb - s.ceiling_field - s.varying) = s.arguments::jsonb
          AND (SELECT count(*) FROM proposals AS p WHERE p.standing_rule_id = s.id)
              < s.max_uses)
    THEN
        RAISE EXCEPTION 'proposals: the standing rule does not cover this proposal'
            USING ERRCODE = 'integrity_constraint_violation';
    END IF;
    RETURN NEW;
END;
$function$;

CREATE OR REPLACE FUNCTION proposals_status_follows_lifecycle()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
BEGIN
    IF NEW.status <> OLD.status AND OLD.status || ' -> ' || NEW.status NOT IN (
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
    THEN
        RAISE EXCEPTION 'proposals: % -> % is not a lifecycle transition', OLD.status, NEW.status
            USING ERRCODE = 'integrity_constraint_violation';
    END IF;
    RETURN NEW;
END;
$function$;

CREATE OR REPLACE FUNCTION removed_only_when_archived()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
DECLARE
    proposal text;
BEGIN
    IF TG_TABLE_NAME = 'proposals' THEN  -- each branch reads a column only its table has
        proposal := OLD.id;
    ELSE
        proposal := OLD.proposal_id;
    END IF;
    IF NOT EXISTS (SELECT 1 FROM archived_proposals WHERE id = proposal) THEN
        RAISE EXCEPTION '%: only the rows of an archived proposal can be removed', TG_TABLE_NAME
            USING ERRCODE = 'integrity_constraint_violation';
    END IF;
    RETURN OLD;
END;
$function$;

CREATE OR REPLACE FUNCTION reviews_are_append_only()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
BEGIN
    RAISE EXCEPTION 'reviews are append-only: a verdict cannot be changed or deleted (%)', TG_OP
        USING ERRCODE = 'integrity_constraint_violation';
END;
$function$;

CREATE OR REPLACE FUNCTION reviews_only_of_sampled_proposals()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM proposals WHERE id = NEW.proposal_id AND review_sampled) THEN
        RAISE EXCEPTION 'reviews: only a proposal sampled for review can be reviewed'
            USING ERRCODE = 'integrity_constraint_violation';
    END IF;
    RETURN NEW;
END;
$function$;

CREATE OR REPLACE FUNCTION standing_rules_only_revocation_changes()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
BEGIN
    IF TG_OP <> 'UPDATE'
       OR (NEW.id, NEW.operation, NEW.agent, NEW.rule_id, NEW.ceiling_field, NEW.ceiling,
           NEW.created_by, NEW.created_from, NEW.created_at, NEW.expires_at, NEW.arguments::text,
           NEW.varying, NEW.max_uses)
          IS DISTINCT FROM
          (OLD.id, OLD.operation, OLD.agent, OLD.rule_id, OLD.ceiling_field, OLD.ceiling,
           OLD.created_by, OLD.created_from, OLD.created_at, OLD.expires_at, OLD.arguments::text,
           OLD.varying, OLD.max_uses)
       OR OLD.revoked_at IS NOT NULL OR NEW.revoked_at IS NULL
    THEN
        RAISE EXCEPTION 'standing_rules: a grant cannot be changed or deleted, only revoked once (%)',
            TG_OP USING ERRCODE = 'integrity_constraint_violation';
    END IF;
    RETURN NEW;
END;
$function$;

CREATE TRIGGER approvals_refuse_truncate BEFORE TRUNCATE ON approvals FOR EACH STATEMENT EXECUTE FUNCTION approvals_are_append_only();

CREATE TRIGGER approvals_refuse_update BEFORE UPDATE ON approvals FOR EACH ROW EXECUTE FUNCTION approvals_are_append_only();

CREATE TRIGGER approvals_removed_only_when_archived BEFORE DELETE ON approvals FOR EACH ROW EXECUTE FUNCTION removed_only_when_archived();

CREATE TRIGGER archived_proposals_refuse_truncate BEFORE TRUNCATE ON archived_proposals FOR EACH STATEMENT EXECUTE FUNCTION archived_proposals_are_written_once();

CREATE TRIGGER archived_proposals_refuse_update_and_delete BEFORE DELETE OR UPDATE ON archived_proposals FOR EACH ROW EXECUTE FUNCTION archived_proposals_are_written_once();

CREATE TRIGGER audit_head_moves_forward BEFORE DELETE OR UPDATE ON audit_head FOR EACH ROW EXECUTE FUNCTION audit_head_moves_forward();

CREATE TRIGGER audit_head_refuses_truncate BEFORE TRUNCATE ON audit_head FOR EACH STATEMENT EXECUTE FUNCTION audit_head_moves_forward();

CREATE TRIGGER audit_log_refuses_truncate BEFORE TRUNCATE ON audit_log FOR EACH STATEMENT EXECUTE FUNCTION audit_log_is_append_only();

CREATE TRIGGER audit_log_refuses_update_and_delete BEFORE DELETE OR UPDATE ON audit_log FOR EACH ROW EXECUTE FUNCTION audit_log_is_append_only();

CREATE TRIGGER audit_log_sealed_at_head BEFORE INSERT OR UPDATE ON audit_log FOR EACH ROW WHEN ((new.seq IS NOT NULL)) EXECUTE FUNCTION audit_log_sealed_at_head();

CREATE TRIGGER delegations_only_revocation_changes BEFORE DELETE OR UPDATE ON delegations FOR EACH ROW EXECUTE FUNCTION delegations_only_revocation_changes();

CREATE TRIGGER delegations_refuse_truncate BEFORE TRUNCATE ON delegations FOR EACH STATEMENT EXECUTE FUNCTION delegations_only_revocation_changes();

CREATE TRIGGER digests_refuse_truncate BEFORE TRUNCATE ON digests FOR EACH STATEMENT EXECUTE FUNCTION digests_are_written_once();

CREATE TRIGGER digests_refuse_update_and_delete BEFORE DELETE OR UPDATE ON digests FOR EACH ROW EXECUTE FUNCTION digests_are_written_once();

CREATE TRIGGER escalations_report_is_frozen BEFORE UPDATE OF id, agent, submission_key, submission_fingerprint, conversation_id, requested_by, customer_ref, team, summary, trigger, verdict, channel, callback_url, created_at ON escalations FOR EACH ROW EXECUTE FUNCTION escalations_report_is_frozen();

CREATE TRIGGER escalations_status_follows_lifecycle BEFORE UPDATE OF status ON escalations FOR EACH ROW EXECUTE FUNCTION escalations_status_follows_lifecycle();

CREATE CONSTRAINT TRIGGER pending_counts_at_commit AFTER INSERT ON pending_count_changes DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION pending_counts_apply();

CREATE TRIGGER pending_counts_on_delete AFTER DELETE ON proposals FOR EACH ROW WHEN ((old.status = 'pending'::text)) EXECUTE FUNCTION pending_counts_note();

CREATE TRIGGER pending_counts_on_insert AFTER INSERT ON proposals FOR EACH ROW WHEN ((new.status = 'pending'::text)) EXECUTE FUNCTION pending_counts_note();

CREATE TRIGGER pending_counts_on_update AFTER UPDATE OF status, agent ON proposals FOR EACH ROW WHEN ((((old.status = 'pending'::text) OR (new.status = 'pending'::text)) AND ((old.status IS DISTINCT FROM new.status) OR (old.agent IS DISTINCT FROM new.agent)))) EXECUTE FUNCTION pending_counts_note();

CREATE TRIGGER proposals_batch_set_once BEFORE UPDATE OF batch_id ON proposals FOR EACH ROW WHEN ((new.batch_id IS DISTINCT FROM old.batch_id)) EXECUTE FUNCTION proposals_batch_set_once();

CREATE TRIGGER proposals_batch_set_once_on_insert BEFORE INSERT ON proposals FOR EACH ROW WHEN ((new.batch_id IS NOT NULL)) EXECUTE FUNCTION proposals_batch_set_once();

CREATE TRIGGER proposals_contract_is_frozen BEFORE UPDATE OF id, agent, submission_key, submission_fingerprint, requested_by, run_id, operation, request, arguments, preview, binding_hash, agent_reason, callback_url, rule_id, decision, policy_note, approver_roles, channel, created_at, risk, quorum, supersedes, edited_by ON proposals FOR EACH ROW EXECUTE FUNCTION proposals_contract_is_frozen();

CREATE TRIGGER proposals_delegation_covers BEFORE INSERT ON proposals FOR EACH ROW WHEN ((new.delegation_id IS NOT NULL)) EXECUTE FUNCTION proposals_delegation_covers();

CREATE TRIGGER proposals_delegation_is_frozen BEFORE UPDATE OF delegation_id ON proposals FOR EACH ROW EXECUTE FUNCTION proposals_delegation_is_frozen();

CREATE TRIGGER proposals_digest_items_match BEFORE UPDATE OF digest_id, slack_channel, slack_ts ON proposals FOR EACH ROW EXECUTE FUNCTION proposals_digest_items_match();

CREATE TRIGGER proposals_expiry_extends_once BEFORE UPDATE OF expires_at, extended_by, extended_at ON proposals FOR EACH ROW WHEN (((old.expires_at IS DISTINCT FROM new.expires_at) OR (old.extended_by IS DISTINCT FROM new.extended_by) OR (old.extended_at IS DISTINCT FROM new.extended_at))) EXECUTE FUNCTION proposals_expiry_extends_once();

CREATE TRIGGER proposals_notify_change AFTER UPDATE OF status ON proposals FOR EACH ROW WHEN ((old.status IS DISTINCT FROM new.status)) EXECUTE FUNCTION proposals_notify_change();

CREATE TRIGGER proposals_removed_only_when_archived BEFORE DELETE ON proposals FOR EACH ROW EXECUTE FUNCTION removed_only_when_archived();

CREATE TRIGGER proposals_standing_is_frozen BEFORE UPDATE OF standing_rule_id, review_sampled ON proposals FOR EACH ROW EXECUTE FUNCTION proposals_standing_is_frozen();

CREATE TRIGGER proposals_standing_rule_covers BEFORE INSERT ON proposals FOR EACH ROW WHEN ((new.standing_rule_id IS NOT NULL)) EXECUTE FUNCTION proposals_standing_rule_covers();

CREATE TRIGGER proposals_status_follows_lifecycle BEFORE UPDATE OF status ON proposals FOR EACH ROW EXECUTE FUNCTION proposals_status_follows_lifecycle();

CREATE TRIGGER reviews_only_of_sampled_proposals BEFORE INSERT ON reviews FOR EACH ROW EXECUTE FUNCTION reviews_only_of_sampled_proposals();

CREATE TRIGGER reviews_refuse_truncate BEFORE TRUNCATE ON reviews FOR EACH STATEMENT EXECUTE FUNCTION reviews_are_append_only();

CREATE TRIGGER reviews_refuse_update BEFORE UPDATE ON reviews FOR EACH ROW EXECUTE FUNCTION reviews_are_append_only();

CREATE TRIGGER reviews_removed_only_when_archived BEFORE DELETE ON reviews FOR EACH ROW EXECUTE FUNCTION removed_only_when_archived();

CREATE TRIGGER standing_rules_only_revocation_changes BEFORE DELETE OR UPDATE ON standing_rules FOR EACH ROW EXECUTE FUNCTION standing_rules_only_revocation_changes();

CREATE TRIGGER standing_rules_refuse_truncate BEFORE TRUNCATE ON standing_rules FOR EACH STATEMENT EXECUTE FUNCTION standing_rules_only_revocation_changes();
