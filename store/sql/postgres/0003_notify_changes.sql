-- 0003: tell every instance when a proposal is created or changes status.
--
-- An agent long-polling one instance waits for a decision that may land in another. Each
-- instance LISTENs on the channel below (store/postgres.py, listen); the database sends the
-- proposal's id when the transaction that changed it commits, and never for one rolled back.
-- The payload is only the id: listeners re-read the proposal, so a lost notification costs a
-- delay (waiters also re-read on their own every second), never a wrong answer.
CREATE FUNCTION proposals_notify_change() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('countersign_proposal_changed', NEW.id);
    RETURN NULL;
END;
$$;

CREATE TRIGGER proposals_notify_change
AFTER INSERT OR UPDATE OF status ON proposals
FOR EACH ROW EXECUTE FUNCTION proposals_notify_change();
