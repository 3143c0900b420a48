"""Block Kit for standing rules and reviews: pure functions of stored values (and ``now``).

The grant modal (with what people decided lately on the calls it would let through), the
confirmation to the granter, the ``/countersign standing`` list with its Revoke buttons, and the
review post of a sampled automatic approval with its two verdict buttons.
Every button's value is one opaque id (a proposal's or a standing rule's) and nothing else.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any, Final

from pydantic import JsonValue

from bot.render import blocks as kit
from bot.render.actions import (
    APPROVE_STANDING_VIEW,
    DURATION_INPUT,
    REVIEW_OK,
    REVIEW_SHOULD_HAVE_ASKED,
    REVOKE_STANDING,
    USES_INPUT,
)
from bot.render.blocks import Blocks, Message
from bot.render.figures import why_asked
from bot.render.inert import Mrkdwn, inert, own
from bot.render.proposal import preview_fields, preview_note
from bot.render.status import state_line
from bot.render.words import mention, reference, remaining, span, when
from contracts.durations import format_duration
from contracts.formats import Formats, field_label, show_value
from contracts.standing import Grant, StandingPolicy
from store.proposals import Proposal
from store.standing import Reviewed, RuleHistory, StandingRule

__all__ = [
    "granted_text",
    "history_text",
    "review_message",
    "standing_list_blocks",
    "standing_modal",
]


#: The standing rules ``/countersign standing`` shows (each takes two blocks).
LISTED: Final = 20

_VERDICTS: Final = {
    "ok": ":white_check_mark: *Looks right*",
    "should_have_asked": ":warning: *Should have been asked*",
}


def _duration(duration: timedelta) -> str:
    """A duration as people say it: "1 hour", "7 days", "1 day 12 hours"."""
    return span(duration.total_seconds())


def _ceiling(
    field: str, ceiling: int | float, formats: Formats, arguments: Mapping[str, JsonValue]
) -> str:
    """ "*Amount* up to `450.00 USD`": the ceiling in the operation's terms (``arguments``, the
    values it sits among, give money its currency)."""
    shown = show_value(formats.get(field), ceiling, arguments)
    return f"*{_label(formats, field)}* up to {kit.code(shown, 60)}"


def _label(formats: Formats, field: str) -> str:
    return kit.clip(inert(field_label(formats, field)), 100)


def _calls(count: int) -> str:
    return f"{count} call{'s' if count != 1 else ''}"


def _varying(varying: Sequence[str], ceiling: str, formats: Formats) -> str:
    """The arguments besides the ceiling that a covered call may change, if any."""
    others = [f"*{_label(formats, name)}*" for name in varying if name != ceiling]
    if not others:
        return "everything else as approved here"
    return f"everything else as approved here (only {_listed(others)} may differ)"


def _listed(items: Sequence[str]) -> str:
    return items[0] if len(items) == 1 else f"{', '.join(items[:-1])} and {items[-1]}"


def standing_modal(
    proposal: Proposal,
    standing: StandingPolicy,
    choices: Sequence[timedelta],
    uses: Sequence[int] = (),
    formats: Formats | None = None,
    history: RuleHistory | None = None,
) -> dict[str, Any]:
    """The modal that asks how long similar calls may be approved automatically, and how many
    (``uses``, largest last; none: no choice, the rule's ``max_uses``), its figures in the
    operation's terms (``formats``), with what people decided on such calls lately
    (``history``; None: not known, nothing said); private_metadata is the proposal id, each
    option's value a duration ("1h", "7d") or a number of calls."""
    shown = formats or {}
    ceiling = proposal.arguments.get(standing.ceiling)
    limit = ceiling if isinstance(ceiling, int | float) else 0
    options = [
        {"text": kit.plain(_duration(choice), 75), "value": format_duration(choice)}
        for choice in choices
    ]
    return kit.modal(
        APPROVE_STANDING_VIEW,
        "Approve + allow similar",
        metadata=proposal.id,
        submit="Approve",
        blocks=[
            kit.section(
                own(
                    f"*{inert(proposal.preview.title)}*\n"
                    f"This one is approved now. For the time you choose, agent"
                    f" *{inert(proposal.agent)}* may also do similar requests without asking"
                    " anyone:"
                    f" {_ceiling(standing.ceiling, limit, shown, proposal.arguments)},"
                    f" {_varying(standing.varying, standing.ceiling, shown)}; at most"
                    f" {_calls(standing.max_uses)}. Each is recorded, and you can revoke this any"
                    " time with `/countersign standing`. Requests of the person who grants it are"
                    " never covered."
                )
            ),
            *([] if history is None else [_history_block(history, proposal.agent)]),
            {
                "type": "input",
                "block_id": DURATION_INPUT,
                "label": kit.plain("Allow similar calls for", 2000),
                "element": {
                    "type": "static_select",
                    "action_id": DURATION_INPUT,
                    "options": options,
                    "initial_option": options[0],
                },
            },
            *_uses_input(uses),
        ],
    )


def _history_block(history: RuleHistory, agent: str) -> dict[str, Any]:
    return {**kit.section(history_text(history, agent)), "block_id": "history"}


def history_text(history: RuleHistory, agent: str) -> Mrkdwn:
    """One sentence: what people decided lately on the calls of ``agent`` (its name made inert)
    that this rule asked them about: "In the last 30 days people approved 784 such requests from
    billing-bot under this rule, rejected 2 and let 1 expire: about 1 in 260 was not approved."
    (a call left to expire was not approved either)."""
    window = f"the last {history.days:,} days"
    if history.capped_at is not None:
        window += f" (the latest {history.capped_at:,} such requests)"
    name = kit.clip(inert(agent), 200)
    if not history.decided:
        return own(f"No such request from {name} was decided under this rule in {window}.")
    approved = (
        f"{history.approved:,} such request{'s' if history.approved != 1 else ''}"
        if history.approved
        else "no such request"
    )
    told = (
        f"In {window} people approved {approved} from {name} under this rule,"
        f" rejected {_count(history.rejected)} and let {_count(history.expired)} expire"
    )
    refused = history.rejected + history.expired
    if not refused:
        return own(f"{told}.")
    return own(f"{told}: {_share(refused, history.decided)}")


def _count(number: int) -> str:
    return f"{number:,}" if number else "none"


def _share(refused: int, decided: int) -> str:
    """How many of the ``decided`` calls were not approved (rejected or left to expire), as
    people say it: "about 1 in 260 was not approved" while they are at most half, "2 of 3 were
    not approved" beyond."""
    if 2 * refused > decided:
        verb = "was" if refused == 1 else "were"
        return f"{refused:,} of {decided:,} {verb} not approved."
    if decided % refused == 0:
        return f"1 in {decided // refused:,} was not approved."
    return f"about 1 in {_rounded(decided / refused):,} was not approved."


def _rounded(ratio: float) -> int:
    """``ratio`` to the nearest whole number, to two significant figures from 100 on."""
    whole = int(ratio + 0.5)
    if whole < 100:
        return whole
    unit = int(10 ** (len(str(whole)) - 2))
    return int(ratio / unit + 0.5) * unit


def _uses_input(uses: Sequence[int]) -> Blocks:
    if not uses:
        return []
    options = [{"text": kit.plain(_calls(count), 75), "value": str(count)} for count in uses]
    return [
        {
            "type": "input",
            "block_id": USES_INPUT,
            "label": kit.plain("At most", 2000),
            "element": {
                "type": "static_select",
                "action_id": USES_INPUT,
                "options": options,
                "initial_option": options[-1],
            },
        }
    ]


def granted_text(standing_rule_id: str, grant: Grant, formats: Formats | None = None) -> Mrkdwn:
    """What the granter sees, only to them, once the rule exists (figures through ``formats``)."""
    shown = formats or {}
    return own(
        kit.clip(
            f":white_check_mark: Approved. Until {when(grant.expires_at)}, agent"
            f" *{inert(grant.agent)}* may also do similar requests without asking:"
            f" {_ceiling(grant.ceiling_field, grant.ceiling, shown, grant.arguments)},"
            f" {_varying(grant.varying, grant.ceiling_field, shown)}; at most"
            f" {_calls(grant.max_uses)}. Revoke it with `/countersign standing`.",
            kit.SECTION_MAX,
        )
    )


def standing_list_blocks(
    rules: Sequence[StandingRule],
    *,
    now: datetime,
    formats_of: Callable[[str], Formats] | None = None,
) -> Blocks:
    """``/countersign standing``: the active standing rules, each with a Revoke button, their
    figures in each operation's terms (``formats_of(operation)``)."""
    if not rules:
        return [kit.section(own("No standing rules are active."))]
    blocks: Blocks = [kit.header("Active standing rules")]
    for rule in rules[:LISTED]:
        shown = formats_of(rule.operation) if formats_of is not None else {}
        ceiling = _ceiling(rule.ceiling_field, rule.ceiling, shown, rule.arguments)
        uses = (
            f"{_calls(rule.uses)} approved so far, {rule.remaining} of {rule.max_uses} "
            f"use{'s' if rule.max_uses != 1 else ''} remaining"
        )
        blocks.append(
            {
                "type": "section",
                "block_id": f"standing-{rule.id}",
                "text": {
                    "type": "mrkdwn",
                    "verbatim": True,
                    "text": kit.clip(
                        f"Agent *{inert(rule.agent)}*, under rule *{inert(rule.rule_id[:120])}*:"
                        f" {ceiling}"
                        f", {_varying(rule.varying, rule.ceiling_field, shown)}"
                        f"\nGranted by {mention(rule.created_by)} · expires "
                        f"{when(rule.expires_at)} ({remaining(rule.expires_at, now)}) · {uses}"
                        "",
                        kit.SECTION_MAX,
                    ),
                },
                "accessory": {
                    "type": "button",
                    "action_id": REVOKE_STANDING,
                    "text": kit.plain("Revoke", kit.BUTTON_MAX),
                    "style": "danger",
                    "value": rule.id,
                    "confirm": {
                        "title": kit.plain("Revoke this standing rule?", 100),
                        "text": kit.plain(
                            "Similar calls will be asked for again from now on.", 300
                        ),
                        "confirm": kit.plain("Revoke", 30),
                        "deny": kit.plain("Cancel", 30),
                        "style": "danger",
                    },
                },
            }
        )
    hidden = len(rules) - LISTED
    if hidden > 0:
        blocks.append(
            kit.context(own(f"{hidden} more not shown; the soonest to expire come first."))
        )
    return blocks


def review_message(proposal: Proposal, review: Reviewed | None = None) -> Message:
    """A sampled automatic approval, for a person to judge: its preview, why it ran without
    asking, what came of it; the verdict buttons until someone gives a verdict, then theirs."""
    title = inert(proposal.preview.title)
    if proposal.standing_rule_id is not None:
        why = "a standing rule"
    else:
        why = f"rule *{inert((proposal.rule_id or '(none)')[:120])}*"
    fields = preview_fields(proposal)
    blocks: Blocks = [
        kit.header(f"Review: {proposal.preview.title}"),
        *kit.field_sections(fields, budget=3),
        *preview_note(proposal),
        kit.section(
            own(f"*Approved automatically by* {why}, without asking anyone.\n{why_asked(proposal)}")
        ),
        kit.section(state_line(proposal)),
        kit.context(
            own(
                f"Agent *{inert(proposal.agent)}* for {mention(proposal.requested_by)} · "
                f"{reference(proposal.id)}"
            )
        ),
    ]
    if review is None:
        blocks.append(
            {
                "type": "actions",
                "block_id": "review",
                "elements": [
                    kit.button(REVIEW_OK, "Looks right", proposal.id, "primary"),
                    kit.button(
                        REVIEW_SHOULD_HAVE_ASKED, "Should have been asked", proposal.id, "danger"
                    ),
                ],
            }
        )
    else:
        blocks.append(
            kit.section(
                own(
                    f"{_VERDICTS[review.verdict]}, said {mention(review.reviewer)} "
                    f"{when(review.at)}."
                )
            )
        )
    return kit.message(own(f"Review an automatic approval: {title}"), blocks)
