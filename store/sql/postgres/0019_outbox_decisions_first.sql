-- 0019: a decision's message update and thread reply are claimed before new cards
-- (claim_decision_deliveries, store/outbox.py): behind a backlog of posts, a person who clicked
-- would otherwise wait for every card already due before seeing their decision. This index
-- holds exactly those entries, so finding them costs nothing however many posts are due.
CREATE INDEX outbox_due_decisions ON outbox (next_attempt_at, id)
    WHERE delivered_at IS NULL AND abandoned_at IS NULL
      AND effect IN ('slack.update', 'slack.reply');
