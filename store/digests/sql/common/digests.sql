-- Digests of similar proposals (store/digests/verbs.py): the same SQL on SQLite and PostgreSQL.

-- name: insert_digest
-- A digest, once: a second attach of the same digest finds it stored.
INSERT INTO digests (id, channel, ts, operation, requested_by, created_at, batch_id)
VALUES (:id, :channel, :ts, :operation, :requested_by, :created_at, :batch_id)
ON CONFLICT (id) DO NOTHING

-- name: select_digest
-- One digest by id.
SELECT * FROM digests WHERE id = :id

-- name: select_digest_items
-- A digest's items, in the order its message lists them.
SELECT * FROM proposals WHERE digest_id = :digest_id ORDER BY created_at, id
