-- The audit log's hash chain (store/audit/verbs.py): the same SQL on SQLite and PostgreSQL.

-- name: insert_audit_entry
-- Append one entry sealed after the head (SQLite's writer knows it); triggers check that it
-- follows the head, and move the head.
INSERT INTO audit_log (seq, at, proposal_id, actor, event, detail, prev_hash, hash)
VALUES (:seq, :at, :proposal_id, :actor, :event, :detail, :prev_hash, :hash)

-- name: select_audit_head
-- The last sealed entry of the chain as the head row names it (seq 0 and the genesis hash when
-- empty).
SELECT seq, hash FROM audit_head WHERE id = 1

-- name: select_audit_log
-- The whole sealed audit log in chain order.
SELECT * FROM audit_log WHERE seq IS NOT NULL ORDER BY seq

-- name: select_proposal_audit_log
-- One proposal's sealed audit entries in chain order.
SELECT * FROM audit_log WHERE proposal_id = :proposal_id AND seq IS NOT NULL ORDER BY seq
