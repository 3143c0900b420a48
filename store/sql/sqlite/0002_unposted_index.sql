-- Pending proposals whose Slack message was never posted (Slack was down or refused the post).
-- The sweep looks for them every few seconds, so they get their own small partial index
-- instead of a scan over every pending proposal.
CREATE INDEX proposals_unposted ON proposals (created_at, id)
    WHERE status = 'pending' AND channel IS NOT NULL AND slack_ts IS NULL;
