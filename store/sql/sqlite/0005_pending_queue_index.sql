-- 0005: an approver's queue (pending proposals of one channel, soonest expiry first, a page at a
-- time) reads only the rows it returns, however many proposals are stored or pending.
-- Without it the query scans every pending proposal and sorts them (countersign bench, scale).
CREATE INDEX proposals_pending_queue ON proposals (channel, expires_at, id)
    WHERE status = 'pending';
