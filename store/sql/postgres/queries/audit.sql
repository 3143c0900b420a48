-- The audit chain on PostgreSQL (store/audit_log.py).

-- name: audit_head_for_append
-- The head the next entry follows, locked until the transaction ends: appends from every
-- connection and instance queue here, so the chain stays linear. A change locks its rows first
-- and the head second, so writers never deadlock.
SELECT seq, hash FROM audit_head WHERE id = 1 FOR UPDATE
