-- 0029: when the owner of a taken escalation took it (take_escalation), kept beside the owner
-- and cleared with it when they let go (hand_back_escalation, resolve_escalation). A recorded
-- Take it applied twice at once knows the take made by the same person at or after its moment
-- as its own (bot/escalations/flow.py, since); updated_at could not say so, as posting the
-- message again (attach_escalation_message) writes it too: a later, new Take it of the owner
-- was taken for the first one's own and left without an answer. A taken escalation's take is
-- its last "taken" audit entry, written with the same moment in the same transaction; updated_at
-- stands in for any without one.
ALTER TABLE escalations ADD COLUMN taken_at timestamptz;

UPDATE escalations SET taken_at = coalesce(
    (SELECT max(audit_log.at) FROM audit_log
     WHERE audit_log.proposal_id = escalations.id AND audit_log.event = 'taken'),
    updated_at)
WHERE status = 'taken';

ALTER TABLE escalations ADD CONSTRAINT escalations_taken_at_with_its_owner
    CHECK ((owner IS NULL) = (taken_at IS NULL));
