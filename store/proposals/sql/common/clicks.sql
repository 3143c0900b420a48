-- Decision clicks recorded at the click and applied after it (store/proposals/clicks.py).

-- name: record_click
-- Record a click on a proposal in :status (pending, or needs_reconciliation for a retry or a
-- reconciliation); no row back: the proposal is not in that status (or does not exist), or
-- this person's click of this verb is recorded already.
INSERT INTO recorded_clicks (subject, actor, verb, channel, detail, recorded_at)
SELECT id, :actor, :verb, :channel, :detail, :now FROM proposals
WHERE id = :subject AND status = :status
ON CONFLICT (subject, actor, verb) DO NOTHING
RETURNING *

-- name: record_digest_click
-- Record a click on a digest that has an item still pending; no row back: none is (or the
-- digest does not exist), or this person's click of this verb is recorded already.
INSERT INTO recorded_clicks (subject, actor, verb, channel, detail, recorded_at)
SELECT id, :actor, :verb, :channel, :detail, :now FROM digests
WHERE id = :subject
  AND EXISTS (SELECT 1 FROM proposals WHERE digest_id = :subject AND status = 'pending')
ON CONFLICT (subject, actor, verb) DO NOTHING
RETURNING *

-- name: record_escalation_click
-- Record a click on an escalation not resolved; no row back: it is resolved (or does not
-- exist), or this person's click of this verb is recorded already.
INSERT INTO recorded_clicks (subject, actor, verb, channel, detail, recorded_at)
SELECT id, :actor, :verb, :channel, :detail, :now FROM escalations
WHERE id = :subject AND status <> 'resolved'
ON CONFLICT (subject, actor, verb) DO NOTHING
RETURNING *

-- name: select_recorded_click
-- One person's recorded click of one verb on one subject.
SELECT * FROM recorded_clicks WHERE subject = :subject AND actor = :actor AND verb = :verb

-- name: select_click
-- One recorded click, while it is not settled.
SELECT id FROM recorded_clicks WHERE id = :id

-- name: settle_click
-- The click was applied (or refused and the clicker told): it is done.
DELETE FROM recorded_clicks WHERE id = :id

-- name: count_recorded_clicks
-- Clicks recorded and not yet settled.
SELECT count(*) AS waiting FROM recorded_clicks
