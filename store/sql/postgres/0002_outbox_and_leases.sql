-- 0002: the outbox, execution leases, and reconciliation by a person (PostgreSQL).

-- Reconciliation: a proposal whose effect is uncertain can be resolved by a person (succeeded or
-- failed) or retried with the same idempotency key. The lifecycle function gets the new edges;
-- its trigger stays.
CREATE OR REPLACE FUNCTION proposals_status_follows_lifecycle() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.status <> OLD.status AND OLD.status || ' -> ' || NEW.status NOT IN (
        'pending -> executing',
        'pending -> rejected',
        'pending -> expired',
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

-- An execution lease: the claim says until when its executor may take to record an outcome.
-- A proposal still executing after that lost its executor (a crash): it is never executed again
-- blindly but moved to needs_reconciliation by the sweep of whichever instance comes first.
ALTER TABLE proposals ADD COLUMN lease_until timestamptz;
CREATE INDEX proposals_executing_lease ON proposals (lease_until) WHERE status = 'executing';

-- The re-post scan of 0001 is replaced by the outbox.
DROP INDEX proposals_unposted;

-- The outbox: every Slack post or update and every agent callback a transition causes, written
-- in the transaction of the transition (store.lifecycle.EFFECTS) and delivered by a worker with
-- retries. Entries of one proposal and lane ('slack' or 'callback') are delivered in order:
-- transitions of one proposal hold its row lock while they write, so their ids follow their
-- order. Workers in any number of instances lease entries with FOR UPDATE SKIP LOCKED.
CREATE TABLE outbox (
    id               bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    proposal_id      text NOT NULL REFERENCES proposals (id),
    effect           text NOT NULL
                     CHECK (effect IN ('slack.post', 'slack.update', 'slack.reply', 'callback')),
    lane             text NOT NULL CHECK (lane IN ('slack', 'callback')),
    -- the status the proposal entered: which reply to post, which state to call back with
    status           text NOT NULL,
    created_at       timestamptz NOT NULL,
    attempts         integer NOT NULL DEFAULT 0 CHECK (attempts >= 0),
    next_attempt_at  timestamptz NOT NULL,
    leased_until     timestamptz,
    delivered_at     timestamptz,
    abandoned_at     timestamptz,
    last_error       text
);

-- Due entries, for the worker.
CREATE INDEX outbox_due ON outbox (next_attempt_at, id)
    WHERE delivered_at IS NULL AND abandoned_at IS NULL;

-- Per proposal and lane, the undelivered entries in order (an entry waits for the ones before).
CREATE INDEX outbox_open_by_proposal ON outbox (proposal_id, lane, id)
    WHERE delivered_at IS NULL AND abandoned_at IS NULL;
