-- 0021: every decision click is recorded when it arrives and applied after it, not only Approve
-- (bot/decisions.py): a rejection with its reason, an extension, a retry or a reconciliation
-- of a proposal, a digest's decisions and an escalation's. `subject` is what was clicked on (a
-- proposal, a digest or an escalation: the verb says which); `detail` holds what the click
-- carries besides (a reason, the chosen items, a note) as a JSON object; `attempts` counts the
-- leases, so that an applier knows when an earlier one may have applied it already. SQLite
-- cannot change a CHECK, so the table is made again with the rows it holds.
CREATE TABLE recorded_clicks_0021 (
    id            INTEGER PRIMARY KEY AUTOINCREMENT,
    subject       TEXT NOT NULL,
    actor         TEXT NOT NULL,
    verb          TEXT NOT NULL CHECK (verb IN (
                      'approve', 'reject', 'extend', 'retry',
                      'reconcile_succeeded', 'reconcile_failed',
                      'digest_approve_all', 'digest_approve', 'digest_reject', 'digest_review',
                      'escalation_take', 'escalation_resolve', 'escalation_hand_back')),
    channel       TEXT,
    detail        TEXT NOT NULL DEFAULT '{}'
                  CHECK (json_valid(detail) AND json_type(detail) = 'object'),
    recorded_at   TEXT NOT NULL,
    leased_until  TEXT,
    attempts      INTEGER NOT NULL DEFAULT 0 CHECK (attempts >= 0),
    UNIQUE (subject, actor, verb)
);
INSERT INTO recorded_clicks_0021 (id, subject, actor, verb, channel, recorded_at, leased_until,
                                  attempts)
SELECT id, proposal_id, actor, verb, channel, recorded_at, leased_until,
       CASE WHEN leased_until IS NULL THEN 0 ELSE 1 END
FROM recorded_clicks;
DROP TABLE recorded_clicks;
ALTER TABLE recorded_clicks_0021 RENAME TO recorded_clicks;
