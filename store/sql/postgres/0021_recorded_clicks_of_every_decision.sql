-- 0021: every decision click is recorded when it arrives and applied after it, not only Approve
-- (bot/decisions.py): a rejection with its reason, an extension, a retry or a reconciliation
-- of a proposal, a digest's decisions and an escalation's. `subject` is what was clicked on (a
-- proposal, a digest or an escalation: the verb says which); `detail` holds what the click
-- carries besides (a reason, the chosen items, a note) as a JSON object; `attempts` counts the
-- leases, so that an applier knows when an earlier one may have applied it already.
ALTER TABLE recorded_clicks RENAME COLUMN proposal_id TO subject;
ALTER TABLE recorded_clicks RENAME CONSTRAINT recorded_clicks_proposal_id_actor_verb_key
    TO recorded_clicks_subject_actor_verb_key;
ALTER TABLE recorded_clicks DROP CONSTRAINT recorded_clicks_verb_check;
ALTER TABLE recorded_clicks ADD CONSTRAINT recorded_clicks_verb_check CHECK (verb IN (
    'approve', 'reject', 'extend', 'retry',
    'reconcile_succeeded', 'reconcile_failed',
    'digest_approve_all', 'digest_approve', 'digest_reject', 'digest_review',
    'escalation_take', 'escalation_resolve', 'escalation_hand_back'));
ALTER TABLE recorded_clicks ADD COLUMN detail json NOT NULL DEFAULT '{}'::json
    CHECK (json_typeof(detail) = 'object');
ALTER TABLE recorded_clicks ADD COLUMN attempts integer NOT NULL DEFAULT 0
    CHECK (attempts >= 0);
UPDATE recorded_clicks SET attempts = 1 WHERE leased_until IS NOT NULL;
