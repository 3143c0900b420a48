-- 0017: batching windows and backup approvers (contracts/batching.py, store/batches.py;
-- PostgreSQL).
--
-- A batch holds the proposals of one channel, rule, operation and approver set (its key, which
-- Countersign derives; nothing an agent sends is in it) for up to the rule's window: their posts
-- wait in the outbox until the batch closes (its window ends, or it reaches its max), and then
-- go out as one digest. One batch per key is open at a time (batches_one_open_per_key), so
-- instances joining at once join the same batch.
-- A proposal records the batch it joined when it is stored (proposals_batch_set_once), when it is shown at
-- the latest (shown_after), whether its agent marked it urgent, and when its rule's backup
-- approvers may decide too (backup_at, backup_roles).
--
-- A digest of a batch may list items of several requesters: digests.requested_by is then NULL
-- and digests.batch_id names the batch, whose items alone it may hold.

CREATE TABLE batches (
    -- 'bt_' + 128 random bits
    id            text PRIMARY KEY,
    -- the channel, rule, operation and approver roles its proposals share
    key           text NOT NULL,
    channel       text NOT NULL,
    rule_id       text NOT NULL,
    opened_at     timestamptz NOT NULL,
    -- when its posts are due: the window's end, or the moment it reached max_size
    closes_at     timestamptz NOT NULL,
    max_size      integer NOT NULL CHECK (max_size BETWEEN 1 AND 50),
    size          integer NOT NULL DEFAULT 0 CHECK (size BETWEEN 0 AND max_size),
    -- open: proposals may join; closed: its digest is due; posted: its digest went out
    status        text NOT NULL DEFAULT 'open' CHECK (status IN ('open', 'closed', 'posted')),
    -- while one worker posts its digest (store/batches.py lease_batch)
    leased_until  timestamptz
);

CREATE UNIQUE INDEX batches_one_open_per_key ON batches (key) WHERE status = 'open';

ALTER TABLE proposals ADD COLUMN batch_id text REFERENCES batches (id);
ALTER TABLE proposals ADD COLUMN shown_after timestamptz;
ALTER TABLE proposals ADD COLUMN urgent boolean NOT NULL DEFAULT false;
ALTER TABLE proposals ADD COLUMN backup_at timestamptz;
ALTER TABLE proposals ADD COLUMN backup_roles text[] NOT NULL DEFAULT '{}';
ALTER TABLE proposals ADD COLUMN handed_over_at timestamptz;

CREATE INDEX proposals_batch_items ON proposals (batch_id) WHERE batch_id IS NOT NULL;
CREATE INDEX proposals_backup_due ON proposals (backup_at)
    WHERE status = 'pending' AND backup_at IS NOT NULL AND handed_over_at IS NULL;

-- A proposal joins one batch, when it is stored, of its own channel and rule.
CREATE FUNCTION proposals_batch_set_once() RETURNS trigger
LANGUAGE plpgsql AS $$
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
$$;

CREATE TRIGGER proposals_batch_set_once
BEFORE INSERT OR UPDATE OF batch_id ON proposals
FOR EACH ROW EXECUTE FUNCTION proposals_batch_set_once();

ALTER TABLE digests ALTER COLUMN requested_by DROP NOT NULL;
ALTER TABLE digests ADD COLUMN batch_id text REFERENCES batches (id);
ALTER TABLE digests ADD CONSTRAINT digests_requester_or_batch
    CHECK (requested_by IS NOT NULL OR batch_id IS NOT NULL);

-- An item stays in the digest it was posted in, shown by the digest's message; a digest holds
-- only proposals of its own operation, and of its requester, or of its batch.
CREATE OR REPLACE FUNCTION proposals_digest_items_match() RETURNS trigger
LANGUAGE plpgsql AS $$
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
$$;
