-- 0023: on PostgreSQL the database announces a proposal's change of status, no longer its
-- creation. SQLite announces nothing (one instance serves a file): nothing to change here.
SELECT 1;
