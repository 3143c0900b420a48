"""A new proposal as it is stored: the audit entries it gets ("submitted", "edited" for an edit,
and the policy's own decision when the policy decided it) and the outbox entries of its first
status.

:func:`submitted_entries` says which entries, whichever way they are written. A backend whose
audit entries are appended unsealed (PostgreSQL: store/audit/verbs.py) writes the proposal, its
audit entries and its outbox entries in one statement committed on its own
(:func:`insert_submitted`): one round trip where a transaction took five (BEGIN, the proposal,
an audit entry, an outbox entry, COMMIT). SQLite's writer seals each entry as it appends it, so
there they are appended one by one in the proposal's transaction (``submitted`` in
store/proposals/verbs.py), each statement run inline without a round trip.
"""

from __future__ import annotations

from collections.abc import Mapping

from pydantic import JsonValue

from store.connector import Row, Tx
from store.proposals.effects import created_effects, lane_of
from store.proposals.lifecycle import Status
from store.proposals.records import NewProposal, PendingLimit
from store.proposals.rows import insert_proposal_params
from store.rows import dump_json

__all__ = ["POLICY_ACTOR", "insert_submitted", "policy_detail", "submitted_entries"]

#: Who writes the audit entries of the policy's own decisions.
POLICY_ACTOR = "policy"

#: The audit event the policy's own decision adds to "submitted" (ask adds none).
POLICY_EVENT = {Status.EXECUTING: "auto_approved", Status.DENIED: "denied"}

#: One audit entry of a new proposal: actor, event, detail (at its creation).
Entry = tuple[str, str, dict[str, JsonValue]]


def policy_detail(new: NewProposal) -> dict[str, JsonValue]:
    """The audit detail of the policy's own decision on a new proposal (auto or deny): the rule
    and why, and for an automatic approval the standing rule behind it and its review sample."""
    detail: dict[str, JsonValue] = {"rule_id": new.rule_id, "policy_note": new.policy_note}
    if new.standing_rule_id is not None:
        detail["standing_rule_id"] = new.standing_rule_id
    if new.review_sampled:
        detail["review_sampled"] = True
    return detail


def submitted_entries(
    new: NewProposal,
    *,
    batch_id: str | None,
    shown_after: str | None,
    edit: Mapping[str, JsonValue] | None,
) -> list[Entry]:
    """The audit entries of ``new`` as stored, in order: "submitted" (with the batch it waits
    in, ``shown_after`` its ISO time), "edited" when it is an edit (``edit`` its detail), and
    the policy's decision when the policy decided it."""
    detail: dict[str, JsonValue] = {
        "operation": new.operation,
        "decision": new.decision,
        "rule_id": new.rule_id,
        "status": new.status.value,
    }
    if new.delegation_id is not None:  # the delegation behind requested_by
        detail |= {"delegation_id": new.delegation_id, "requested_by": new.requested_by}
    if new.urgent:  # its agent asked for it to be shown at once
        detail["urgent"] = True
    if batch_id is not None:  # it waits in a batch, shown when that closes at the latest
        detail |= {"batch_id": batch_id, "shown_after": shown_after}
    entries: list[Entry] = [(new.agent, "submitted", detail)]
    if edit is not None:
        entries.append((new.edited_by or "unknown", "edited", dict(edit)))
    if new.status in POLICY_EVENT:
        entries.append((POLICY_ACTOR, POLICY_EVENT[new.status], policy_detail(new)))
    return entries


async def insert_submitted(tx: Tx, new: NewProposal, *, pending_limit: PendingLimit | None) -> Row:
    """Store ``new`` (in no batch, not an edit) with its audit entries, appended unsealed, and
    the outbox entries of its first status, in one statement, unless its agent already stored
    its submission key or its pending proposals, with those in flight not stored yet, reach
    ``pending_limit`` (None: no bound; given only for a proposal that would wait for a
    person). The row of the query ``insert_submitted``: ``has_room``, ``created``, and the
    columns of the proposal stored under the key before (all NULL when none was seen: the new
    one is not read back). Only on a backend whose audit entries are appended unsealed
    (``Backend.appends_unsealed``); it commits on its own."""
    entries = submitted_entries(new, batch_id=None, shown_after=None, edit=None)
    effects = created_effects(new)
    post_due = new.created_at if new.shown_after is None else max(new.created_at, new.shown_after)
    row = await tx.one(
        "insert_submitted",
        **insert_proposal_params(new),
        pending_limit=None if pending_limit is None else pending_limit.limit,
        in_flight=dump_json([] if pending_limit is None else list(pending_limit.in_flight)),
        audit_entries=dump_json([list(entry) for entry in entries]),
        effects=dump_json([[effect.value, lane_of(effect)] for effect in effects]),
        post_due=post_due,
    )
    assert row is not None  # one row always: the room, and what was stored
    if row["created"]:
        tx.appended_unsealed(len(entries))
    return row
