-- 0016: each agent's count of pending proposals, kept by the database as proposals enter and
-- leave 'pending'. The per-agent pending limit (bot/api/quotas.py) read it on every submission
-- with count(*) over the agent's pending proposals: with tens of thousands pending that count
-- cost more than the rest of the submission. Now it reads one row, whatever the backlog.
-- Triggers keep the row, so every writer (transitions, edits, withdrawals, retention, a
-- restored backup) keeps it true; SQLite has one writer, so one row per agent suffices.
CREATE TABLE pending_counts (
    agent    TEXT PRIMARY KEY,
    pending  INTEGER NOT NULL CHECK (pending >= 0)
);

INSERT INTO pending_counts (agent, pending)
    SELECT agent, count(*) FROM proposals WHERE status = 'pending' GROUP BY agent;

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

CREATE TRIGGER pending_counts_on_enter AFTER UPDATE OF status, agent ON proposals
WHEN NEW.status = 'pending' AND (OLD.status IS NOT 'pending' OR NEW.agent IS NOT OLD.agent)
BEGIN
    INSERT INTO pending_counts (agent, pending) VALUES (NEW.agent, 1)
    ON CONFLICT (agent) DO UPDATE SET pending = pending + 1;
END;

CREATE TRIGGER pending_counts_on_delete AFTER DELETE ON proposals
WHEN OLD.status = 'pending'
BEGIN
    UPDATE pending_counts SET pending = pending - 1 WHERE agent = OLD.agent;
END;
