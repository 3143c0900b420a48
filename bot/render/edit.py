"""Block Kit for edits: the edit modal and the thread reply of a superseded proposal.

Pure, like bot/render/proposal.py: functions of proposals and an
:class:`~bot.render.edit_form.EditForm`. The modal's inputs are prefilled from the stored
request; its private_metadata is the proposal id and nothing else.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from decimal import Decimal
from typing import Any, Final

from pydantic import JsonValue

from bot.render.actions import EDIT_FIELD_INPUT, EDIT_VIEW
from bot.render.blocks import Message, clip, code, context, message, modal, plain, section
from bot.render.edit_form import EditField, EditForm, input_label
from bot.render.figures import why_asked
from bot.render.inert import Mrkdwn, inert, own
from bot.render.proposal import request_changes
from bot.render.words import mention, reference, when
from contracts.formats import (
    FieldFormat,
    Formats,
    major_units,
    minor_digits,
    money_currency,
    show_value,
)
from store.proposals import Proposal, Status

__all__ = ["edit_modal", "superseded_reply"]


#: What the person editing is told before they submit.
EDIT_NOTE: Final = (
    "Your edit will be checked against the operation's contract and classified by the policy "
    "again, as a new proposal that replaces this one: it may run at once, wait for other "
    "approvers, or be denied. You cannot approve your own edit."
)

_LABEL_MAX: Final = 2000
_HINT_MAX: Final = 2000
_TEXT_MAX: Final = 3000
_OPTION_TEXT_MAX: Final = 75


def edit_modal(
    proposal: Proposal, form: EditForm, formats: Formats | None = None
) -> dict[str, Any]:
    """The modal that edits ``proposal``'s request: one input per field of ``form``, under the
    field's label in the operation's terms; money in minor units whose currency is known is typed
    in major units under a label naming the currency ("Amount (USD)", "450.00"). Other inputs'
    hints name the field as the request has it and, for money of unknown currency, its unit."""
    shown = formats or {}
    blocks: list[dict[str, Any]] = [
        context(own(EDIT_NOTE)),  # Countersign's words first, before the agent's title
        section(own(f"*{inert(proposal.preview.title)}*\n{reference(proposal.id)}")),
        *(_input(field, shown, proposal.arguments) for field in form.fields),
    ]
    if form.kept:
        kept = ", ".join(code(name, 100) for name in form.kept[:20])
        more = f" and {len(form.kept) - 20} more" if len(form.kept) > 20 else ""
        blocks.append(context(own(f"Kept as they are (too many fields to show): {kept}{more}")))
    if not form.fields:
        blocks.append(section(own("This operation's request has no fields to edit.")))
    return modal(
        EDIT_VIEW,
        "Edit proposal",
        metadata=proposal.id,
        submit="Check and submit" if form.fields else None,
        blocks=blocks,
    )


def _input(
    field: EditField, formats: Formats, arguments: Mapping[str, JsonValue]
) -> dict[str, Any]:
    fmt = formats.get(field.name)
    notes = []
    if field.kind == "money" and field.currency is not None:
        # the request's own description speaks of minor units, as the agent sends them
        notes.append(_money_note(field.currency, field.required))
    else:
        notes.append(field.description or "")
        if field.kind == "json":
            notes.append("As JSON.")
        if fmt is not None and fmt.kind == "money" and field.kind in ("integer", "number"):
            notes.append(_money_unit(fmt, field.value, arguments))
    block: dict[str, Any] = {
        "type": "input",
        "block_id": field.block_id,
        "optional": not field.required,
        "label": plain(input_label(field), _LABEL_MAX),
        "element": _element(field),
    }
    hint = " ".join(note for note in notes if note)
    if hint:
        block["hint"] = plain(hint, _HINT_MAX)
    return block


def _money_note(currency: str, required: bool) -> str:
    """What a money input takes: an amount in the currency's major units."""
    digits = minor_digits(currency)
    places = f"up to {digits} decimals" if digits else "no decimals"
    empty = "" if required else " Leave it empty for the operation's default."
    return f"An amount in {currency}, with {places}.{empty}"


def _money_unit(fmt: FieldFormat, value: JsonValue, arguments: Mapping[str, JsonValue]) -> str:
    """What a money input's figure counts when its currency is not known (so it cannot be typed
    in major units), with the stored value as the reader knows it."""
    currency = money_currency(fmt, arguments)
    unit = "minor units (cents)" if fmt.minor_units else "whole units"
    in_currency = f" of {currency}" if currency else ""
    now = ""
    if isinstance(value, int | float) and not isinstance(value, bool):
        now = f": it is {show_value(fmt, value, arguments)} now"
    return f"In {unit}{in_currency}{now}."


def _element(field: EditField) -> dict[str, Any]:
    value = field.value
    if field.kind in ("choice", "boolean"):
        choices = field.choices if field.kind == "choice" else ("true", "false")
        labels = field.choice_labels
        options = [_option(choice, labels.get(choice)) for choice in choices]
        element: dict[str, Any] = {
            "type": "static_select",
            "action_id": EDIT_FIELD_INPUT,
            "placeholder": plain("Choose", 150),
            "options": options,
        }
        chosen = json.dumps(value) if isinstance(value, bool) else value
        if chosen in choices:
            element["initial_option"] = _option(str(chosen), labels.get(str(chosen)))
        return element
    if field.kind == "money" and field.currency is not None:
        element = {
            "type": "number_input",
            "action_id": EDIT_FIELD_INPUT,
            "is_decimal_allowed": minor_digits(field.currency) > 0,
            "min_value": "0",
        }
        if isinstance(value, int) and not isinstance(value, bool):
            element["initial_value"] = major_units(value, field.currency)
        return element
    if field.kind in ("integer", "number"):
        element = {
            "type": "number_input",
            "action_id": EDIT_FIELD_INPUT,
            "is_decimal_allowed": field.kind == "number",
        }
        if isinstance(value, int | float) and not isinstance(value, bool):
            element["initial_value"] = _number(value)
        return element
    element = {"type": "plain_text_input", "action_id": EDIT_FIELD_INPUT}
    if field.kind == "json":
        element["multiline"] = True
        if value is not None:
            element["initial_value"] = json.dumps(value, indent=2, ensure_ascii=False)
        return element
    if isinstance(value, str) and value:
        element["initial_value"] = value
        element["multiline"] = "\n" in value or len(value) > 150
    return element


def _option(value: str, label: str | None = None) -> dict[str, Any]:
    return {"text": plain(label or value, _OPTION_TEXT_MAX), "value": value}


def _number(value: int | float) -> str:
    """A number as number_input shows it: never in exponent notation."""
    if isinstance(value, int):
        return str(value)
    return format(Decimal(repr(value)), "f")


# --- the thread reply -----------------------------------------------------------------------------


def superseded_reply(
    proposal: Proposal, edit: Proposal | None, *, link: str | None, formats: Formats | None = None
) -> Message:
    """The reply in a superseded proposal's thread: who edited it, where the edit is, what the
    policy made of it and which request fields changed, in the operation's terms (``formats``)."""
    at = f" {when(proposal.decided_at)}" if proposal.decided_at is not None else ""
    title = inert(proposal.preview.title)
    blocks = [
        section(
            own(
                f":pencil2: *Superseded*: {mention(proposal.decided_by)} edited this proposal{at}."
                " This version will not be executed."
            )
        )
    ]
    if edit is None:
        shown = code(proposal.superseded_by or "unknown", 60)
        blocks.append(section(own(f"The edit is proposal {shown}.")))
        return message(own(f"Superseded by an edit: {title}"), blocks)
    name = f"<{link}|{inert(edit.preview.title)}>" if link else f"*{inert(edit.preview.title)}*"
    blocks.append(
        section(
            own(f"The edit, checked and classified again: {name}.\n{_edit_status(proposal, edit)}")
        )
    )
    changes = request_changes(
        proposal.request, edit.request, formats, arguments=(proposal.arguments, edit.arguments)
    )
    if changes:
        blocks.append(context(own(clip("*Changed:* " + "; ".join(changes), _TEXT_MAX))))
    return message(own(f"Superseded by an edit: {title}"), blocks)


def _edit_status(proposal: Proposal, edit: Proposal) -> Mrkdwn:
    if edit.status is Status.DENIED:
        return own(f":no_entry: The policy denied it: {why_asked(edit)}")
    if edit.decision == "auto":
        rule = f" (rule {code(edit.rule_id, 120)})" if edit.rule_id else ""
        return own(f":white_check_mark: The policy approved it automatically{rule}.")
    if edit.status is Status.PENDING:
        elsewhere = edit.channel and edit.channel != proposal.channel
        where = f" in <#{edit.channel}>" if elsewhere else ""
        return own(f":hourglass_flowing_sand: It waits for a decision{where}.")
    return own(f"It is now {edit.status.value.replace('_', ' ')}.")
