-- 0011_numbering_aligned_with_sqlite: no change to the schema.
--
-- SQLite has two index migrations that PostgreSQL took into other steps (0002_unposted_index
-- was part of PostgreSQL's 0001, 0005_pending_queue_index of a later one), so the numbers had
-- drifted apart: digests were 0008 on SQLite and 0007 here. This empty step brings
-- PostgreSQL to 0011 beside SQLite. From 0012 on, a change to the schema is one migration with
-- the same number and name in both folders (tests/store/test_schema.py checks it; docs/store.md
-- says how to add one).
SELECT 1;
