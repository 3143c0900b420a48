"""Figures in the operation's own terms: why the policy asked, what an edit changed and what
execution returned, under the operation's field labels and formats (contracts/formats.py),
never as raw keys and minor units. Pure functions; what they return is Countersign's own text
around values made inert (bot/render/inert.py), or plain pairs the caller makes inert.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import datetime
from typing import Final

from pydantic import JsonValue

from bot.render.inert import Mrkdwn, inert, own
from bot.render.words import when
from contracts.formats import Formats, field_label, show_value
from store.proposals import Proposal

__all__ = ["changed_fields", "result_fields", "why_asked"]

#: The longest policy note shown.
NOTE_MAX: Final = 1500

#: How bot/flow/standing.py opens the note of a call a standing rule approved: the rule's id,
#: the Slack user who granted it and when it ends, each in a form nothing else matches.
_STANDING_NOTE: Final = re.compile(
    r"standing rule (sr_[0-9a-f]{1,64}), granted by ([UW][A-Z0-9]{2,30}) until "
    r"([0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\+00:00) under (?=rule ')"
)


#: How bot/flow/standing.py names, in an ask's note, a standing rule that did not cover the call
#: (its granter could not decide it now): the rule's id and the granter's user id are for the
#: audit log; a person reads "a standing rule does not cover it: ...". Replaced in the plain
#: text before it is made inert, into Countersign's words alone (no mention, no markup): a
#: value quoted in the note that mimics it gains nothing.
_NOT_COVERING: Final = re.compile(
    r"standing rule sr_[0-9a-f]{1,64}, granted by [UW][A-Z0-9]{2,30}, does not cover it: "
)


def why_asked(proposal: Proposal) -> Mrkdwn:
    """The policy's reason in a line: "Amount 450.00 USD ≤ 2,000.00 USD limit of rule
    *refunds*". The note was written by the policy when the proposal was classified, in the
    operation's terms; it may quote argument values, so it is shown inert. A call a standing
    rule approved names the rule, mentions who granted it and says until when, as Slack shows
    times: "a standing rule granted by @Ada until today at 16:09: Amount 300.00 USD ≤ 500.00
    USD limit, …" (its id is for the audit log, not for a sentence). A standing rule that did
    not cover an asked call is said without its id or its granter's user id."""
    note = _NOT_COVERING.sub("a standing rule does not cover it: ", proposal.policy_note)
    rule = proposal.rule_id
    if len(note) > NOTE_MAX:
        note = note[: NOTE_MAX - 1] + "…"
    standing = _STANDING_NOTE.match(note)
    if standing is not None and standing.group(1) == proposal.standing_rule_id:
        # the standing rule's own words, then the policy rule's part as any other note
        _, granter, until = standing.groups()
        granted = (
            f"a standing rule granted by <@{granter}> until {when(datetime.fromisoformat(until))}"
        )
        rest = proposal.model_copy(update={"policy_note": note[standing.end() :]})
        return own(f"{granted}: {why_asked(rest)}")
    if rule is None:
        return inert(note)
    named = f"rule *{inert(rule[:120])}*"
    prefix = f"rule {rule!r}"
    if note.startswith(f"{prefix}: "):
        clauses = inert(note[len(prefix) + 2 :])
        return own(
            f"{clauses} of {named}" if clauses.endswith(" limit") else f"{clauses} ({named})"
        )
    if note.startswith(f"{prefix} matches every "):  # a rule without conditions
        done = "runs without asking" if proposal.decision == "auto" else "is asked for"
        return own(f"every request of this kind {done} ({named})")
    if note.startswith(f"{prefix} "):
        return own(f"{named} {inert(note[len(prefix) + 1 :])}")
    return own(f"{inert(note)} ({named})")


def changed_fields(
    before: JsonValue,
    after: JsonValue,
    formats: Formats,
    context: tuple[Mapping[str, JsonValue], Mapping[str, JsonValue]] = ({}, {}),
) -> list[tuple[str, str | None, str | None]]:
    """``(label, old, new)`` for each top-level request field that differs between ``before``
    and ``after`` (None: not set), shown through ``formats``; ``context`` holds the values each
    side sits among (its frozen arguments), for a currency another field holds."""
    old: dict[str, JsonValue] = before if isinstance(before, dict) else {"request": before}
    new: dict[str, JsonValue] = after if isinstance(after, dict) else {"request": after}
    old_context, new_context = {**context[0], **old}, {**context[1], **new}
    changes = []
    for name in [*old, *(n for n in new if n not in old)]:
        if (name in old) == (name in new) and old.get(name) == new.get(name):
            continue
        fmt = formats.get(name)
        changes.append(
            (
                field_label(formats, name),
                show_value(fmt, old[name], old_context) if name in old else None,
                show_value(fmt, new[name], new_context) if name in new else None,
            )
        )
    return changes


def result_fields(result: Mapping[str, JsonValue], formats: Formats) -> list[tuple[str, str]]:
    """``(label, value)`` for each field of an operation's result, through ``formats`` (a money
    field finds its currency among the result's own fields)."""
    return [
        (field_label(formats, name), show_value(formats.get(name), value, result))
        for name, value in result.items()
    ]
