-- 0007: digests: similar proposals (one channel, operation and requester) that became due
-- together, shown in one Slack message with one row per proposal (store/digests.py; PostgreSQL).
--
-- A digest is written once, when its message is posted, together with its items: each item's
-- digest_id, slack_channel and slack_ts name the digest and its message, and never change after.
-- Every item keeps its own status, decision, outcome and audit trail.

CREATE TABLE digests (
    -- 'dg_' + 128 random bits: the only thing the digest's buttons carry
    id            text PRIMARY KEY,
    channel       text NOT NULL,
    ts            text NOT NULL,
    operation     text NOT NULL,
    requested_by  text NOT NULL,
    created_at    timestamptz NOT NULL,
    CONSTRAINT digests_one_per_message UNIQUE (channel, ts)
);

CREATE FUNCTION digests_are_written_once() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'digests: a posted digest cannot be changed or deleted'
        USING ERRCODE = 'integrity_constraint_violation';
END;
$$;

CREATE TRIGGER digests_refuse_update_and_delete
BEFORE UPDATE OR DELETE ON digests
FOR EACH ROW EXECUTE FUNCTION digests_are_written_once();

CREATE TRIGGER digests_refuse_truncate
BEFORE TRUNCATE ON digests
FOR EACH STATEMENT EXECUTE FUNCTION digests_are_written_once();

ALTER TABLE proposals ADD COLUMN digest_id text REFERENCES digests (id);

-- A digest's items in the order its message lists them.
CREATE INDEX proposals_digest_items ON proposals (digest_id, created_at, id)
    WHERE digest_id IS NOT NULL;

-- An item stays in the digest it was posted in, shown by the digest's message, and a digest
-- holds only proposals of its own operation and requester.
CREATE FUNCTION proposals_digest_items_match() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF (OLD.digest_id IS NOT NULL AND NEW.digest_id IS DISTINCT FROM OLD.digest_id)
       OR (NEW.digest_id IS NOT NULL AND NOT EXISTS (
            SELECT 1 FROM digests AS d
            WHERE d.id = NEW.digest_id AND d.operation = NEW.operation
              AND d.requested_by = NEW.requested_by
              AND d.channel = NEW.slack_channel AND d.ts = NEW.slack_ts))
    THEN
        RAISE EXCEPTION 'proposals: a digest item stays in its digest, shown by its message, and shares its operation and requester'
            USING ERRCODE = 'integrity_constraint_violation';
    END IF;
    RETURN NEW;
END;
$$;

CREATE TRIGGER proposals_digest_items_match
BEFORE UPDATE OF digest_id, slack_channel, slack_ts ON proposals
FOR EACH ROW EXECUTE FUNCTION proposals_digest_items_match();
