-- 0030: the agents' calls by when they were made, for `countersign policy export-calls`
-- (select_calls_since). Without it every page of 500 read the whole table again and sorted what
-- it kept: a day of calls (86,374) out of 1,000,000 stored took 58 s on SQLite, a page costing as
-- much as the table, so a week took minutes. A page now starts where the last one ended. Its
-- columns are frozen with the contract: a proposal adds one entry when it is made and none when
-- it is decided (SQLite); on PostgreSQL a decision, which writes a new row version, adds one as
-- it does to every index.
CREATE INDEX proposals_by_time ON proposals (created_at, id);
