-- Delegations from Slack (store/delegations/verbs.py): the same SQL on SQLite and PostgreSQL.

-- name: insert_delegation
-- A new delegation.
INSERT INTO delegations (id, token_hash, agent, person, created_at, expires_at)
VALUES (:id, :token_hash, :agent, :person, :created_at, :expires_at)
RETURNING *

-- name: select_delegation
-- One delegation by id.
SELECT * FROM delegations WHERE id = :id

-- name: select_delegation_by_token_hash
-- The delegation a token belongs to (its hash is unique).
SELECT * FROM delegations WHERE token_hash = :token_hash

-- name: select_active_delegations_of
-- A person's active delegations, newest first.
SELECT * FROM delegations
WHERE person = :person AND revoked_at IS NULL AND expires_at > :now
ORDER BY created_at DESC, id
LIMIT :limit

-- name: revoke_delegation
-- The revocation: active -> revoked, once.
UPDATE delegations SET revoked_by = :actor, revoked_at = :now
WHERE id = :id AND revoked_at IS NULL AND expires_at > :now
RETURNING id
