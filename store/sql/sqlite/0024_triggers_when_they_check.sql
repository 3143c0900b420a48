-- 0024: on PostgreSQL four row triggers run their function only for the rows it checks (a
-- WHEN with the condition the function returned early without). SQLite's triggers are written
-- apart: nothing to change here.
SELECT 1;
