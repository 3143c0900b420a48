-- 0017: batching windows and backup approvers (contracts/batching.py, store/batches.py).
-- countersign-migrate: foreign_keys=off
--
-- A batch holds the proposals of one channel, rule, operation and approver set (its key, which
-- Countersign derives; nothing an agent sends is in it) for up to the rule's window: their posts
-- wait in the outbox until the batch closes (its window ends, or it reaches its max), and then
-- go out as one digest. One batch per key is open at a time (batches_one_open_per_key).
-- A proposal records the batch it joined when it is stored (proposals_batch_set_once), when it is shown at
-- the latest (shown_after), whether its agent marked it urgent, and when its rule's backup
-- approvers may decide too (backup_at, backup_roles).
--
-- A digest of a batch may list items of several requesters: digests.requested_by is then NULL
-- and digests.batch_id names the batch, whose items alone it may hold. SQLite cannot drop a NOT
-- NULL in place, so the digests table is rebuilt (foreign keys off, checked before COMMIT).

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

CREATE UNIQUE INDEX batches_one_open_per_key ON batches (key) WHERE status = 'open';

ALTER TABLE proposals ADD COLUMN batch_id TEXT REFERENCES batches (id);
ALTER TABLE proposals ADD COLUMN shown_after TEXT;
ALTER TABLE proposals ADD COLUMN urgent INTEGER NOT NULL DEFAULT 0 CHECK (urgent IN (0, 1));
ALTER TABLE proposals ADD COLUMN backup_at TEXT;
ALTER TABLE proposals ADD COLUMN backup_roles TEXT NOT NULL DEFAULT '[]'
    CHECK (json_valid(backup_roles) AND json_type(backup_roles) = 'array');
ALTER TABLE proposals ADD COLUMN handed_over_at TEXT;

CREATE INDEX proposals_batch_items ON proposals (batch_id) WHERE batch_id IS NOT NULL;
CREATE INDEX proposals_backup_due ON proposals (backup_at)
    WHERE status = 'pending' AND backup_at IS NOT NULL AND handed_over_at IS NULL;

-- A proposal joins one batch, when it is stored, of its own channel and rule.
CREATE TRIGGER proposals_batch_set_once
BEFORE UPDATE OF batch_id ON proposals
WHEN NEW.batch_id IS NOT OLD.batch_id
BEGIN
    SELECT RAISE(ABORT, 'proposals: a proposal joins one batch, once, of its own channel and rule');
END;

CREATE TRIGGER proposals_batch_of_its_channel_and_rule
BEFORE INSERT ON proposals
WHEN NEW.batch_id IS NOT NULL AND NOT EXISTS (
    SELECT 1 FROM batches AS b
    WHERE b.id = NEW.batch_id AND b.channel = NEW.channel AND b.rule_id = NEW.rule_id)
BEGIN
    SELECT RAISE(ABORT, 'proposals: a proposal joins one batch, once, of its own channel and rule');
END;

DROP TRIGGER proposals_digest_items_match;

CREATE TABLE digests_new (
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

INSERT INTO digests_new (id, channel, ts, operation, requested_by, created_at)
SELECT id, channel, ts, operation, requested_by, created_at FROM digests;

DROP TABLE digests;
ALTER TABLE digests_new RENAME TO digests;

CREATE TRIGGER digests_refuse_update
BEFORE UPDATE ON digests
BEGIN
    SELECT RAISE(ABORT, 'digests: a posted digest cannot be changed');
END;

CREATE TRIGGER digests_refuse_delete
BEFORE DELETE ON digests
BEGIN
    SELECT RAISE(ABORT, 'digests: a posted digest cannot be deleted');
END;

-- An item stays in the digest it was posted in, shown by the digest's message; a digest holds
-- only proposals of its own operation, and of its requester, or of its batch.
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
