-- A new proposal stored with its audit entries and outbox entries on SQLite
-- (store/proposals/submissions.py).

-- name: insert_submitted
-- Not run on SQLite: its writer seals each audit entry as it appends it (store/sqlite_tx.py),
-- so a new proposal's entries are appended one by one in the proposal's transaction
-- (insert_proposal, then the audit and outbox entries). SQLite has no INSERT inside WITH; this
-- fails naming the query, with PostgreSQL's parameters.
SELECT insert_submitted_is_not_run_on_sqlite(
    :id, :agent, :submission_key, :submission_fingerprint, :requested_by, :run_id,
    :operation, :request, :arguments, :preview, :binding_hash, :agent_reason, :callback_url,
    :rule_id, :decision, :policy_note, :approver_roles, :channel, :status, :created_at,
    :expires_at, :lease_until, :risk, :quorum, :supersedes, :edited_by,
    :remind_at, :standing_rule_id, :review_sampled, :delegation_id, :shown_after, :urgent,
    :backup_roles, :backup_at, :batch_id, :audit_entries, :effects, :post_due, :pending_limit,
    :in_flight
)

-- name: count_pending_with_in_flight
-- An agent's proposals waiting for a person, with those of :in_flight (its submissions in
-- flight elsewhere, by proposal id, a JSON array) not stored yet: what its pending limit is
-- checked against (the write transaction sees the rows its batch stored before it).
SELECT (
    SELECT coalesce(sum(pending), 0) FROM pending_counts WHERE agent = :agent
) + (
    SELECT count(*) FROM json_each(:in_flight) AS other
    WHERE NOT EXISTS (SELECT 1 FROM proposals WHERE proposals.id = other.value)
) AS pending
