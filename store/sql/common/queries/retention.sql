-- Retention (store/retention.py): decided proposals archived, then removed; the same SQL on
-- SQLite and PostgreSQL. The audit log is never touched: only proposals and their own rows go.

-- name: select_archivable
-- Decided proposals whose last change is before :before, oldest first: nothing left to deliver,
-- no standing rule granted by them (it names its proposal), and no standing rule they used that
-- could still approve more (it counts its uses in this table). has_successor: an edit names it.
SELECT p.*, EXISTS (SELECT 1 FROM proposals AS q WHERE q.supersedes = p.id) AS has_successor
FROM proposals AS p
WHERE p.updated_at < :before
  AND p.status NOT IN ('pending', 'executing', 'needs_reconciliation')
  AND NOT EXISTS (
      SELECT 1 FROM outbox AS o
      WHERE o.proposal_id = p.id AND o.delivered_at IS NULL AND o.abandoned_at IS NULL)
  AND NOT EXISTS (SELECT 1 FROM standing_rules AS s WHERE s.created_from = p.id)
  AND (p.standing_rule_id IS NULL OR EXISTS (
      SELECT 1 FROM standing_rules AS s
      WHERE s.id = p.standing_rule_id AND (s.expires_at <= :now OR s.revoked_at IS NOT NULL)))
  AND NOT EXISTS (
      SELECT 1 FROM proposals AS q
      WHERE q.supersedes = p.id
        AND (q.updated_at >= :before OR q.status IN ('pending', 'executing', 'needs_reconciliation')))
ORDER BY p.updated_at, p.id
LIMIT :limit

-- name: select_review_of
-- The verdict on a proposal sampled for review, if any.
SELECT verdict, reviewer, at FROM reviews WHERE proposal_id = :proposal_id

-- name: delete_archived_approvals
-- The approvals of an archived proposal (the database refuses it for any other).
DELETE FROM approvals WHERE proposal_id = :id

-- name: delete_archived_review
-- The review of an archived proposal.
DELETE FROM reviews WHERE proposal_id = :id

-- name: delete_archived_outbox
-- The delivered (or abandoned) outbox rows of an archived proposal.
DELETE FROM outbox WHERE proposal_id = :id

-- name: delete_archived_proposal
-- The archived proposal itself.
DELETE FROM proposals WHERE id = :id

-- name: count_archived_proposals
-- How many proposals retention has removed, ever.
SELECT count(*) AS archived FROM archived_proposals
