-- 0003: the outbox, execution leases, and reconciliation by a person.

-- Reconciliation: a proposal whose effect is uncertain can be resolved by a person (succeeded or
-- failed) or retried with the same idempotency key. The trigger is replaced with the new edges.
DROP TRIGGER proposals_status_follows_lifecycle;
CREATE TRIGGER proposals_status_follows_lifecycle
BEFORE UPDATE OF status ON proposals
WHEN NEW.status <> OLD.status AND OLD.status || ' -> ' || NEW.status NOT IN (
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
BEGIN
    SELECT RAISE(ABORT, 'proposals: this status change is not a lifecycle transition');
END;

-- An execution lease: the claim says until when its executor may take to record an outcome.
-- A proposal still executing after that lost its executor (a crash): it is never executed again
-- blindly but moved to needs_reconciliation by the sweep.
ALTER TABLE proposals ADD COLUMN lease_until TEXT;
CREATE INDEX proposals_executing_lease ON proposals (lease_until) WHERE status = 'executing';

-- The re-post scan of 0002 is replaced by the outbox.
DROP INDEX proposals_unposted;

-- The outbox: every Slack post or update and every agent callback a transition causes, written
-- in the transaction of the transition (store.lifecycle.EFFECTS) and delivered by a worker with
-- retries. Entries of one proposal and lane ('slack' or 'callback') are delivered in order.
CREATE TABLE outbox (
    id               INTEGER PRIMARY KEY AUTOINCREMENT,
    proposal_id      TEXT NOT NULL REFERENCES proposals (id),
    effect           TEXT NOT NULL
                     CHECK (effect IN ('slack.post', 'slack.update', 'slack.reply', 'callback')),
    lane             TEXT NOT NULL CHECK (lane IN ('slack', 'callback')),
    -- the status the proposal entered: which reply to post, which state to call back with
    status           TEXT NOT NULL,
    created_at       TEXT NOT NULL,
    attempts         INTEGER NOT NULL DEFAULT 0 CHECK (attempts >= 0),
    next_attempt_at  TEXT NOT NULL,
    leased_until     TEXT,
    delivered_at     TEXT,
    abandoned_at     TEXT,
    last_error       TEXT
) STRICT;

-- Due entries, for the worker.
CREATE INDEX outbox_due ON outbox (next_attempt_at, id)
    WHERE delivered_at IS NULL AND abandoned_at IS NULL;

-- Per proposal and lane, the undelivered entries in order (an entry waits for the ones before).
CREATE INDEX outbox_open_by_proposal ON outbox (proposal_id, lane, id)
    WHERE delivered_at IS NULL AND abandoned_at IS NULL;
