-- 0025: the posts still to show, oldest first within what makes them similar. Grouping similar
-- posts into a digest (claim_similar_posts) read every pending, never-shown proposal of the
-- channel, operation and requester, joined each to its outbox entries and sorted them all, to
-- lease the first few: with posts arriving faster than Slack lets a channel show them, each
-- lookup cost more as the backlog grew (10 ms with 5,000 waiting). It now walks them in the
-- order it leases them and stops at its limit.
DROP INDEX proposals_unshown;
CREATE INDEX proposals_unshown ON proposals (channel, operation, requested_by, created_at, id)
    WHERE status = 'pending' AND slack_ts IS NULL;
