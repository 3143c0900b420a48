-- 0008: digests: similar proposals (one channel, operation and requester) that became due
-- together, shown in one Slack message with one row per proposal (store/digests.py).
--
-- A digest is written once, when its message is posted, together with its items: each item's
-- digest_id, slack_channel and slack_ts name the digest and its message, and never change after.
-- Every item keeps its own status, decision, outcome and audit trail.

CREATE TABLE digests (
    -- 'dg_' + 128 random bits: the only thing the digest's buttons carry
    id            TEXT PRIMARY KEY,
    channel       TEXT NOT NULL,
    ts            TEXT NOT NULL,
    operation     TEXT NOT NULL,
    requested_by  TEXT NOT NULL,
    created_at    TEXT NOT NULL,
    UNIQUE (channel, ts)
) STRICT;

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

ALTER TABLE proposals ADD COLUMN digest_id TEXT REFERENCES digests (id);

-- A digest's items in the order its message lists them.
CREATE INDEX proposals_digest_items ON proposals (digest_id, created_at, id)
    WHERE digest_id IS NOT NULL;

-- An item stays in the digest it was posted in, shown by the digest's message, and a digest
-- holds only proposals of its own operation and requester.
CREATE TRIGGER proposals_digest_items_match
BEFORE UPDATE OF digest_id, slack_channel, slack_ts ON proposals
WHEN (OLD.digest_id IS NOT NULL AND NEW.digest_id IS NOT OLD.digest_id)
  OR (NEW.digest_id IS NOT NULL AND NOT EXISTS (
        SELECT 1 FROM digests AS d
        WHERE d.id = NEW.digest_id AND d.operation = NEW.operation
          AND d.requested_by = NEW.requested_by
          AND d.channel = NEW.slack_channel AND d.ts = NEW.slack_ts))
BEGIN
    SELECT RAISE(ABORT, 'proposals: a digest item stays in its digest, shown by its message, and shares its operation and requester');
END;
