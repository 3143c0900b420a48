-- The audit chain on SQLite (store/audit_log.py).

-- name: audit_head_for_append
-- The head the next entry follows. The write transaction holds SQLite's one write lock, so
-- nobody else appends until it ends; the store follows the head in memory after this read.
SELECT seq, hash FROM audit_head WHERE id = 1
