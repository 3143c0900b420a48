-- 0015: the posts still to show, by what makes them similar. Grouping similar posts into a
-- digest (claim_similar_posts) looks up the pending, never-shown proposals of one channel,
-- operation and requester; without this index it walked every due outbox entry and, for each,
-- every pending proposal of the channel (seconds per lookup with a backlog of thousands).
CREATE INDEX proposals_unshown ON proposals (channel, operation, requested_by)
    WHERE status = 'pending' AND slack_ts IS NULL;
