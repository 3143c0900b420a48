-- 0010: per-agent limits (bot/quotas.py) count one agent's pending proposals and its escalations
-- nobody has taken on every submission, and App Home reads each agent's pending proposals
-- riskiest first (bot/waiting_page.py). These partial indexes hold exactly those rows, so the
-- count and the page read only the agent's own, however many other proposals are pending.
CREATE INDEX proposals_pending_by_agent ON proposals (agent, risk_rank, expires_at, id)
    WHERE status = 'pending';
CREATE INDEX escalations_open_by_agent ON escalations (agent) WHERE status = 'open';
