-- The audit chain on PostgreSQL (store/audit/verbs.py): entries are appended unsealed, in the
-- transaction of the change they record, and sealed into the chain in batches afterwards.

-- name: insert_unsealed_audit_entry
-- Append one entry without its place in the chain: no lock on the head, so writers on every
-- connection and instance commit side by side. Its id orders it among the entries of a batch.
INSERT INTO audit_log (at, proposal_id, actor, event, detail)
VALUES (:at, :proposal_id, :actor, :event, :detail)
RETURNING id

-- name: select_unsealed_after_head
-- The head of the chain, and the committed entries waiting for their seal in the order they
-- were appended, from one snapshot and without a lock: one row per entry with the head's seq
-- and hash beside it, or one row of the head alone (``id`` NULL) when none waits. None when
-- the head row is missing.
SELECT head.seq AS head_seq, head.hash AS head_hash,
    entry.id, entry.at, entry.proposal_id, entry.actor, entry.event, entry.detail
FROM audit_head AS head
LEFT JOIN LATERAL (
    SELECT id, at, proposal_id, actor, event, detail
    FROM audit_log WHERE seq IS NULL ORDER BY id LIMIT :limit
) AS entry ON true
WHERE head.id = 1
ORDER BY entry.id

-- name: seal_audit_entry
-- Give one entry its place after the head: triggers check that the entry follows the head and
-- that nothing else of the entry changes, and move the head. An entry another sealer has
-- sealed meanwhile is not matched. The head is locked before the entry's row (an UPDATE locks
-- its target row only once the join has given it, here after the locked head): were the row
-- locked first, a sealer whose batch holds only a later entry could hold that row while it
-- waits for the head, held by a sealer about to seal that entry too (a deadlock).
UPDATE audit_log SET seq = :seq, prev_hash = :prev_hash, hash = :hash
FROM (SELECT id FROM audit_head WHERE id = 1 FOR UPDATE) AS head
WHERE audit_log.id = :id AND audit_log.seq IS NULL

-- name: select_audit_entry
-- One entry by its row's id.
SELECT * FROM audit_log WHERE id = :id

-- name: insert_unsealed_audit_entries
-- Several entries at :at, appended unsealed in one statement, in the order given (their ids
-- order them in the chain).
INSERT INTO audit_log (at, proposal_id, actor, event, detail)
SELECT :at, entry.proposal_id, entry.actor, entry.event, entry.detail::json
FROM unnest(:proposal_ids::text[], :actors::text[], :events::text[], :details::text[])
    WITH ORDINALITY AS entry (proposal_id, actor, event, detail, n)
ORDER BY entry.n
