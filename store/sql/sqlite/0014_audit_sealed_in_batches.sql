-- 0014: audit entries join the chain after their transaction, sealed in batches (docs/audit.md)
-- -- on PostgreSQL, whose writers no longer lock the audit head. SQLite has one writer, which
-- knows the head and seals every entry as it appends it (store/sqlite_tx.py): its audit_log
-- keeps seq as the rowid and nothing changes here.
SELECT 1;
