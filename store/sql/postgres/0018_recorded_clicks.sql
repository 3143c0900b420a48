-- 0018: a person's decision click, recorded when it arrives and applied after it
-- (bot/decisions.py): the click is answered "recorded" once this row is durable, and the row
-- is removed when the decision has been applied (or refused, and the clicker told why). Only a
-- click on a pending proposal is recorded, once per person and verb, so the table holds at
-- most a few rows per pending proposal. No reference to proposals: retention may remove a
-- decided proposal while a leftover row of it waits to be settled.
CREATE TABLE recorded_clicks (
    id            bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    proposal_id   text NOT NULL,
    actor         text NOT NULL,
    verb          text NOT NULL CHECK (verb IN ('approve')),
    channel       text,
    recorded_at   timestamptz NOT NULL,
    leased_until  timestamptz,
    UNIQUE (proposal_id, actor, verb)
);
