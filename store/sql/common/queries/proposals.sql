-- Proposals and their transitions (store/proposals.py): the same SQL on SQLite and PostgreSQL.
-- Every transition is a compare-and-set: the UPDATE names the status it expects, and no row back
-- means another transaction got there first.

-- name: select_proposal
-- One proposal by id.
SELECT * FROM proposals WHERE id = :id
