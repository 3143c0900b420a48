-- 0020: on PostgreSQL an agent's pending count is now changed at commit in a sorted order, so
-- two writers never deadlock on its rows. SQLite has one writer at a time and one count row
-- per agent, changed as each proposal is written: nothing to change here.
SELECT 1;
