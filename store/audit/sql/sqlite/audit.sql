-- The audit chain on SQLite (store/audit/verbs.py). The write transaction holds SQLite's one
-- write lock, so the store's writer knows the head (store/sqlite_tx.py) and seals every entry
-- as it appends it (insert_audit_entry): no entry is ever left unsealed. The sealer's queries
-- below keep PostgreSQL's names; here they find nothing to seal.

-- name: insert_unsealed_audit_entry
-- Not run on SQLite (every entry is sealed as it is appended); the table has no room for an
-- unsealed entry (seq is the rowid, prev_hash and hash are required), so this would fail.
INSERT INTO audit_log (at, proposal_id, actor, event, detail)
VALUES (:at, :proposal_id, :actor, :event, :detail)
RETURNING seq AS id

-- name: select_unsealed_after_head
-- The head of the chain alone (``id`` NULL): no entry waits for its seal on SQLite.
SELECT seq AS head_seq, hash AS head_hash,
    NULL AS id, NULL AS at, NULL AS proposal_id, NULL AS actor, NULL AS event, NULL AS detail
FROM audit_head WHERE id = 1 LIMIT :limit

-- name: seal_audit_entry
-- Matches nothing on SQLite (no entry is unsealed); the append-only trigger refuses updates.
UPDATE audit_log SET seq = :seq, prev_hash = :prev_hash, hash = :hash
WHERE seq = :id AND seq IS NULL

-- name: select_audit_entry
-- One entry by its row's id, which on SQLite is its seq.
SELECT * FROM audit_log WHERE seq = :id

-- name: insert_unsealed_audit_entries
-- Not run on SQLite (every entry is sealed as it is appended, one by one); the table has no
-- room for an unsealed entry, so this would fail.
INSERT INTO audit_log (at, proposal_id, actor, event, detail)
SELECT :at, entry.value, :actors, :events, :details FROM json_each(:proposal_ids) AS entry
