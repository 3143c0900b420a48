-- 0020: an agent's pending count (0016) is changed at commit in one order, sorted by agent and
-- row, so two writers never wait for each other's count rows in a cycle.
--
-- 0016 changed a count row in a deferred trigger per proposal, in the order the proposals were
-- written. Two transactions changing several proposals (two expiry sweeps, each taking a few
-- overdue proposals of one agent) could then lock the same count rows in opposite orders at
-- commit: each held one row the other needed next, and PostgreSQL ended one with "deadlock
-- detected". Now each change is only noted, without a lock, as it is written; the first
-- deferred trigger at commit sums the transaction's notes per count row and applies them
-- sorted by (agent, shard), and the others find nothing left to do. A row whose changes cancel
-- out is not touched at all.
DROP TRIGGER pending_counts_on_insert ON proposals;
DROP TRIGGER pending_counts_on_update ON proposals;
DROP TRIGGER pending_counts_on_delete ON proposals;
DROP FUNCTION pending_counts_follow();

-- The changes the open transactions have made to the counts, each row one proposal entering
-- (+1) or leaving (-1) 'pending'; a transaction removes its own as it commits.
CREATE TABLE pending_count_changes (
    tx      bigint NOT NULL,
    agent   text NOT NULL,
    shard   smallint NOT NULL,
    change  smallint NOT NULL CHECK (change IN (-1, 1))
);
CREATE INDEX pending_count_changes_tx ON pending_count_changes (tx);

CREATE FUNCTION pending_counts_note() RETURNS trigger
LANGUAGE plpgsql AS $$
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
$$;

CREATE FUNCTION pending_counts_apply() RETURNS trigger
LANGUAGE plpgsql AS $$
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
$$;

CREATE TRIGGER pending_counts_on_insert AFTER INSERT ON proposals
FOR EACH ROW
WHEN (NEW.status = 'pending')
EXECUTE FUNCTION pending_counts_note();

CREATE TRIGGER pending_counts_on_update AFTER UPDATE OF status, agent ON proposals
FOR EACH ROW
WHEN ((OLD.status = 'pending' OR NEW.status = 'pending')
      AND (OLD.status IS DISTINCT FROM NEW.status OR OLD.agent IS DISTINCT FROM NEW.agent))
EXECUTE FUNCTION pending_counts_note();

CREATE TRIGGER pending_counts_on_delete AFTER DELETE ON proposals
FOR EACH ROW
WHEN (OLD.status = 'pending')
EXECUTE FUNCTION pending_counts_note();

CREATE CONSTRAINT TRIGGER pending_counts_at_commit AFTER INSERT ON pending_count_changes
DEFERRABLE INITIALLY DEFERRED FOR EACH ROW
EXECUTE FUNCTION pending_counts_apply();
