-- 0012: a new final status, 'cancelled': the proposing agent withdrew its proposal while it was
-- pending (POST /v1/proposals/{id}/cancel). The status CHECK gains the value and the lifecycle
-- trigger the edge 'pending -> cancelled' (store.lifecycle.TRANSITIONS).

-- Exactly the values of store.lifecycle.Status, with 'cancelled'.
ALTER TABLE proposals DROP CONSTRAINT proposals_status_is_a_lifecycle_status;
ALTER TABLE proposals ADD CONSTRAINT proposals_status_is_a_lifecycle_status CHECK (status IN (
    'pending', 'denied', 'rejected', 'expired', 'executing', 'succeeded', 'needs_reconciliation',
    'revision_required', 'failed', 'superseded', 'cancelled'));

-- The lifecycle (store.lifecycle.TRANSITIONS), with the edge a withdrawal adds.
CREATE OR REPLACE FUNCTION proposals_status_follows_lifecycle() RETURNS trigger
LANGUAGE plpgsql AS $$
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
$$;
