-- 0031: what one person has taken, oldest first by when they took it (select_escalations_owned_by,
-- the App Home's list). It was ordered by updated_at, which posting an escalation's message
-- again also writes (attach_escalation_message): a conversation taken first moved to the end of
-- its owner's list when its message was placed again. Since 0029 the take keeps its moment in
-- taken_at.
DROP INDEX escalations_owner;
CREATE INDEX escalations_owner ON escalations (owner, taken_at, id) WHERE status = 'taken';
