-- Decision clicks recorded at the click and applied after it (store/clicks.py).

-- name: record_click
-- Record a click on a proposal that is pending; no row back: the proposal is not pending (or
-- does not exist), or this person's click of this verb is recorded already.
INSERT INTO recorded_clicks (proposal_id, actor, verb, channel, recorded_at)
SELECT id, :actor, :verb, :channel, :now FROM proposals
WHERE id = :proposal_id AND status = 'pending'
ON CONFLICT (proposal_id, actor, verb) DO NOTHING
RETURNING *

-- name: select_recorded_click
-- One person's recorded click of one verb on one proposal.
SELECT * FROM recorded_clicks WHERE proposal_id = :proposal_id AND actor = :actor AND verb = :verb

-- name: select_click
-- One recorded click, while it is not settled.
SELECT id FROM recorded_clicks WHERE id = :id

-- name: settle_click
-- The click was applied (or refused and the clicker told): it is done.
DELETE FROM recorded_clicks WHERE id = :id

-- name: count_recorded_clicks
-- Clicks recorded and not yet settled.
SELECT count(*) AS waiting FROM recorded_clicks
