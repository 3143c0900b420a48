"""Block Kit for escalations: pure functions of an escalation (and ``now``), no clock, env or I/O.

The summary is the agent's report and is shown labelled as the agent's words, quoted and inert
(bot/render/inert.py);
Countersign's own reading of the trigger (which thresholds the measured signals crossed) is shown
as Countersign's. Buttons carry the escalation id and nothing else. The helpers (escaping,
clipping, Block Kit limits) are the proposal renderer's.
"""

from __future__ import annotations

import json
from typing import Any, Final

from bot.render import blocks as kit
from bot.render.actions import (
    ESCALATION_HAND_BACK,
    ESCALATION_HAND_BACK_VIEW,
    ESCALATION_RESOLVE,
    ESCALATION_TAKE,
    NOTE_INPUT,
)
from bot.render.blocks import Blocks, Message
from bot.render.inert import Mrkdwn, inert, own
from bot.render.words import mention, when, with_times
from contracts.escalation import Signals, TriggerKind
from store.escalations import Escalation, EscalationStatus

__all__ = [
    "HAND_BACK_NOTE_MAX",
    "escalation_message",
    "escalation_refusal_text",
    "escalation_reply",
    "hand_back_modal",
    "reannouncement_reply",
    "why_escalated",
]

#: The longest hand-back note the modal accepts.
HAND_BACK_NOTE_MAX: Final = 1000


_KIND: Final = {
    TriggerKind.EXPLICIT_REQUEST: "The customer asked for a person",
    TriggerKind.REPEATED_FAILURE: "The agent keeps failing",
    TriggerKind.NEGATIVE_SENTIMENT: "The customer is unhappy",
    TriggerKind.RESERVED_TOPIC: "A topic reserved for people",
    TriggerKind.LOW_CONFIDENCE: "The agent is unsure, and the signals agree",
}


def escalation_message(escalation: Escalation, *, handed_back_by: str | None = None) -> Message:
    """The channel message: who asks and why, the agent's report, the state and its buttons."""
    title = f"Escalation: {_KIND[escalation.verdict.kind]}"
    blocks: Blocks = [
        kit.header(title),
        # Countersign's verdict in a block of its own, before any of the agent's text
        kit.section(own(f"*Why Countersign escalated it:* {why_escalated(escalation)}")),
        kit.section(_who(escalation)),
        *_report(escalation),
        kit.context(
            own(f"Signals as measured by the agent: {_signals(escalation.trigger.signals)}"),
            own(f"Escalation {kit.code(escalation.id, 60)} · opened {when(escalation.created_at)}"),
        ),
        {"type": "divider"},
        kit.section(_state_line(escalation, handed_back_by=handed_back_by)),
    ]
    buttons = _buttons(escalation)
    if buttons is not None:
        blocks.append(buttons)
    return kit.message(own(f"{_status_word(escalation)}: {inert(title)}"), blocks[: kit.BLOCKS_MAX])


def why_escalated(escalation: Escalation) -> Mrkdwn:
    """Countersign's reading of the trigger. Its note holds no agent value (the error codes
    show apart, with the signals the agent measured), but one stored before that rule quotes
    an error code inside it: so the note is made inert too."""
    return inert(escalation.verdict.note)


def _who(escalation: Escalation) -> Mrkdwn:
    parts = [
        f"Agent *{inert(escalation.agent)}*",
        f"conversation {kit.code(escalation.conversation_id, 120)}",
    ]
    if escalation.requested_by is not None:
        parts.append(f"for {mention(escalation.requested_by)}")
    if escalation.customer_ref is not None:
        parts.append(f"customer {kit.code(escalation.customer_ref, 120)}")
    if escalation.team is not None:
        parts.append(f"team {kit.code(escalation.team, 60)}")
    return own(" · ".join(parts))


def _report(escalation: Escalation) -> Blocks:
    """The agent's summary, every part labelled and quoted as the agent's words."""
    summary = escalation.summary
    blocks: Blocks = [
        kit.section(
            own(
                "*The agent's report (unverified)* _in the agent's own words:_\n"
                f"*Goal*\n{kit.quote(summary.goal, 1000)}\n"
                f"*Blocked on*\n{kit.quote(summary.blocked_on, 1000)}"
            )
        )
    ]
    if summary.steps_done:
        steps = "\n".join(
            f"{n}. {kit.clip(inert(step), 300)}" for n, step in enumerate(summary.steps_done, 1)
        )
        blocks.append(kit.section(own(f"*Steps done (agent's words)*\n{_quote_lines(steps)}")))
    if summary.tool_results:
        results = "\n".join(
            f"{kit.code(result.tool, 100)}: {kit.clip(inert(result.result_summary), 400)}"
            for result in summary.tool_results
        )
        blocks.append(kit.section(own(f"*Tool results (agent's words)*\n{_quote_lines(results)}")))
    words = escalation.trigger.signals.customer_quote
    if words is not None:
        blocks.append(
            kit.section(
                own("*The customer's words, as the agent reports them*\n" + kit.quote(words, 1000))
            )
        )
    return blocks


def _quote_lines(escaped: str) -> Mrkdwn:
    """Already-escaped lines as a block quote, clipped to fit a section."""
    lines = kit.clip(escaped, kit.SECTION_MAX - 200).splitlines() or [""]
    return own("\n".join(f">{line}" for line in lines))


#: How each signal reads, in the order shown.
_SIGNAL_LABELS: Final = {
    "failed_turns": "Failed turns",
    "error_codes": "Error codes",
    "sentiment_scores": "Sentiment scores",
    "topic_labels": "Topics",
    "confidence": "Confidence",
    "retrieval_hits": "Documents found",
}


def _signals(signals: Signals) -> Mrkdwn:
    """ "Failed turns `4` · Error codes `E500, E500`": each measured signal under its label, its
    values (the agent's) in code spans."""
    measured = signals.model_dump(exclude_defaults=True, exclude={"customer_quote"}, mode="json")
    if not measured:
        return own("none")
    parts = []
    for name, value in measured.items():
        values = value if isinstance(value, list) else [value]
        shown = ", ".join(v if isinstance(v, str) else json.dumps(v) for v in values)
        label = _SIGNAL_LABELS.get(name, name.replace("_", " ").capitalize())
        parts.append(f"{label} {kit.code(shown, 200)}")
    return own(" · ".join(parts))  # six signals at most: well within a context element


def _status_word(escalation: Escalation) -> str:
    return {
        EscalationStatus.OPEN: "Needs a person",
        EscalationStatus.TAKEN: "Taken",
        EscalationStatus.HANDED_BACK: "Handed back",
        EscalationStatus.RESOLVED: "Resolved",
    }[escalation.status]


def _state_line(escalation: Escalation, *, handed_back_by: str | None) -> Mrkdwn:
    status = escalation.status
    if status is EscalationStatus.OPEN:
        return own(":bell: *Nobody has taken it yet.* The agent keeps the conversation meanwhile.")
    if status is EscalationStatus.TAKEN:
        return own(
            f":raising_hand: *Taken by {mention(escalation.owner)}.* The agent has been told to "
            "stop replying."
        )
    if status is EscalationStatus.HANDED_BACK:
        note = kit.quote(escalation.note or "(no note)", 1000)
        return own(
            f":leftwards_arrow_with_hook: *Handed back to the agent* by "
            f"{mention(handed_back_by)}, with this note:\n{note}"
        )
    at = f" {when(escalation.resolved_at)}" if escalation.resolved_at is not None else ""
    line = f":white_check_mark: *Resolved* by {mention(escalation.resolved_by)}{at}."
    if escalation.note:
        line += f"\n{kit.quote(escalation.note, 1000)}"
    return own(line)


def _buttons(escalation: Escalation) -> dict[str, Any] | None:
    status = escalation.status
    if status is EscalationStatus.RESOLVED:
        return None
    if status is EscalationStatus.TAKEN:
        elements = [
            kit.button(ESCALATION_HAND_BACK, "Hand back", escalation.id),
            kit.button(ESCALATION_RESOLVE, "Resolve", escalation.id, "primary"),
        ]
    else:
        elements = [
            kit.button(ESCALATION_TAKE, "Take it", escalation.id, "primary"),
            kit.button(ESCALATION_RESOLVE, "Resolve", escalation.id),
        ]
    return {"type": "actions", "block_id": "escalation", "elements": elements}


# --- thread replies -------------------------------------------------------------------------------


def escalation_reply(escalation: Escalation, *, handed_back_by: str | None = None) -> Message:
    """The thread reply for the status the escalation just entered."""
    line = _state_line(escalation, handed_back_by=handed_back_by)
    return kit.message(
        own(f"{_status_word(escalation)}: escalation {escalation.id}"), [kit.section(line)]
    )


def reannouncement_reply(escalation: Escalation) -> Message:
    """The reminder that nobody has taken an escalation. Only the first reminder mentions the
    channel (``@here``): however many escalations an agent opens, each pages people once."""
    here = "<!here> " if escalation.reannouncements == 1 else ""
    return kit.message(
        own("Still waiting for someone to take this escalation"),
        [
            kit.section(
                own(
                    f"{here}:bell: *Still waiting for someone to take this escalation* "
                    f"(open since {when(escalation.created_at)}; reminder "
                    f"{escalation.reannouncements})."
                )
            )
        ],
    )


# --- private answers and the hand-back modal -----------------------------------------------------


def escalation_refusal_text(escalation: Escalation | None, reason: str) -> Mrkdwn:
    """What a clicker sees, only to them, when their click changed nothing."""
    if escalation is not None and escalation.status is EscalationStatus.RESOLVED:
        who = mention(escalation.resolved_by)
        return own(f":no_entry_sign: This escalation was already resolved by {who}.")
    owner = escalation.owner if escalation is not None else None
    if owner is not None and reason.startswith(owner):  # "U123 has already taken it"
        rest = reason.removeprefix(owner).strip()
        return own(
            kit.clip(f":no_entry_sign: {mention(owner)} {with_times(rest)}.", kit.SECTION_MAX)
        )
    return own(
        kit.clip(
            f":no_entry_sign: Countersign did not do that: {with_times(reason)}", kit.SECTION_MAX
        )
    )


def hand_back_modal(escalation: Escalation) -> dict[str, Any]:
    """Asks for the note the agent gets with the conversation; private_metadata is the id."""
    return kit.modal(
        ESCALATION_HAND_BACK_VIEW,
        "Hand back",
        metadata=escalation.id,
        submit="Hand back",
        blocks=[
            kit.section(
                own(
                    f"Conversation {kit.code(escalation.conversation_id, 120)} goes back to agent "
                    f"*{inert(escalation.agent)}*."
                )
            ),
            kit.text_input(
                NOTE_INPUT,
                label="What should the agent know?",
                hint="The agent receives this note with the conversation.",
                most=HAND_BACK_NOTE_MAX,
            ),
        ],
    )
