-- 0023: the database announces a proposal's change of status (0003), no longer its creation.
--
-- What hears the announcements wakes agents' long polls on a proposal they have already read
-- (bot/api/waiters.py), so nothing can be waiting on a proposal before its creation commits:
-- announcing it was never heard by anyone. And a transaction that notifies takes, at its
-- commit, the database's one lock for notifications until its commit is on disk (PostgreSQL
-- queues notifications in commit order), so every submission's commit waited for the
-- commits of all the others, one after the other. A status set to the value it had (no
-- change) is not announced either.
DROP TRIGGER proposals_notify_change ON proposals;
CREATE TRIGGER proposals_notify_change
AFTER UPDATE OF status ON proposals
FOR EACH ROW WHEN (OLD.status IS DISTINCT FROM NEW.status)
EXECUTE FUNCTION proposals_notify_change();
