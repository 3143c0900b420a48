-- 0032: when people were first shown a proposal in Slack: its own message or a digest holding it
-- was posted and recorded (attach_message, attach_digest). The agent's document says it
-- (shown_at), so that an agent whose wait ran out can tell "people were asked and nobody
-- decided" from "nobody has been shown it yet" (its batch still open, or Slack not taking the
-- post); shown_after is only when it is due. Kept once: placing the message again leaves it.
-- A proposal shown before this migration is shown since its first "posted_to_slack" audit entry,
-- written with the same moment in the same transaction (audit entries are never removed);
-- updated_at stands in for one without it.
ALTER TABLE proposals ADD COLUMN shown_at timestamptz;

UPDATE proposals SET shown_at = coalesce(
    (SELECT min(audit_log.at) FROM audit_log
     WHERE audit_log.proposal_id = proposals.id AND audit_log.event = 'posted_to_slack'),
    updated_at)
WHERE slack_ts IS NOT NULL;
