-- 0028: who last handed an escalation back to its agent, and when (hand_back_escalation): the
-- row said only that nobody has it now. A recorded hand-back applied twice at once (its lease
-- ended while its first application still ran) knows the hand-back made by the same person at
-- or after its moment as its own, as it knows their take or resolution (bot/escalations/flow.py,
-- since): it is not told "only the person who took it can hand it back, and nobody has it now".
ALTER TABLE escalations
    ADD COLUMN handed_back_by text,
    ADD COLUMN handed_back_at timestamptz,
    ADD CONSTRAINT escalations_hand_back_names_its_person
        CHECK ((handed_back_by IS NULL) = (handed_back_at IS NULL));
