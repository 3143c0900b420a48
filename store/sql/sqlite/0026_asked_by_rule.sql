-- 0026: an agent's proposals that a policy rule asked a person about, by when they were made.
-- The grant modal's history of the rule (select_rule_history: the latest 5,000 of the last 30
-- days) read every proposal of the agent and sorted them, to keep the latest few: 1.07 s on
-- SQLite and 0.62 s on PostgreSQL with 1,000,000 of one agent, past the second the modal waits.
-- It now walks them newest first and stops at its limit, whatever the agent has stored. Only
-- asked proposals are in it, and its columns are frozen with the contract, so a proposal adds
-- one entry when it is made and none when it is decided (SQLite); on PostgreSQL a decision,
-- which writes a new row version, adds one as it does to every index (status is in one).
CREATE INDEX proposals_asked_by_rule ON proposals (agent, rule_id, created_at)
    WHERE decision = 'ask';
