-- 0016: each agent's count of pending proposals, kept by the database as proposals enter and
-- leave 'pending'. The per-agent pending limit (bot/api/quotas.py) read it on every submission
-- with count(*) over the agent's pending proposals: with tens of thousands pending that count
-- cost more than the rest of the submission. Now it sums at most SHARDS rows, whatever the
-- backlog. Triggers keep the rows, so every writer (transitions, edits, withdrawals,
-- retention, a restored backup) keeps them true.
--
-- Writers of one agent must not wait for each other on one row (PostgreSQL writers do not
-- serialize, migration 0014), so an agent's count is spread over 8 rows, a proposal's always
-- the same one (from its id), and the triggers are deferred to the commit: a row is locked
-- only while its transaction commits.
CREATE TABLE pending_counts (
    agent    text NOT NULL,
    shard    smallint NOT NULL CHECK (shard BETWEEN 0 AND 7),
    pending  bigint NOT NULL CHECK (pending >= 0),
    PRIMARY KEY (agent, shard)
);

-- The row of an agent's count a proposal is counted in.
CREATE FUNCTION pending_counts_shard(proposal_id text) RETURNS smallint
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$ SELECT (get_byte(decode(md5(proposal_id), 'hex'), 0) % 8)::smallint $$;

INSERT INTO pending_counts (agent, shard, pending)
    SELECT agent, pending_counts_shard(id), count(*) FROM proposals
    WHERE status = 'pending' GROUP BY agent, pending_counts_shard(id);

CREATE FUNCTION pending_counts_follow() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP IN ('UPDATE', 'DELETE') AND OLD.status = 'pending' THEN
        UPDATE pending_counts SET pending = pending - 1
        WHERE agent = OLD.agent AND shard = pending_counts_shard(OLD.id);
    END IF;
    IF TG_OP IN ('INSERT', 'UPDATE') AND NEW.status = 'pending' THEN
        INSERT INTO pending_counts (agent, shard, pending)
        VALUES (NEW.agent, pending_counts_shard(NEW.id), 1)
        ON CONFLICT (agent, shard) DO UPDATE SET pending = pending_counts.pending + 1;
    END IF;
    RETURN NULL;
END;
$$;

CREATE CONSTRAINT TRIGGER pending_counts_on_insert AFTER INSERT ON proposals
DEFERRABLE INITIALLY DEFERRED FOR EACH ROW
WHEN (NEW.status = 'pending')
EXECUTE FUNCTION pending_counts_follow();

CREATE CONSTRAINT TRIGGER pending_counts_on_update AFTER UPDATE OF status, agent ON proposals
DEFERRABLE INITIALLY DEFERRED FOR EACH ROW
WHEN ((OLD.status = 'pending' OR NEW.status = 'pending')
      AND (OLD.status IS DISTINCT FROM NEW.status OR OLD.agent IS DISTINCT FROM NEW.agent))
EXECUTE FUNCTION pending_counts_follow();

CREATE CONSTRAINT TRIGGER pending_counts_on_delete AFTER DELETE ON proposals
DEFERRABLE INITIALLY DEFERRED FOR EACH ROW
WHEN (OLD.status = 'pending')
EXECUTE FUNCTION pending_counts_follow();
