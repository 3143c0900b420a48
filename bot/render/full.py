"""Block Kit for "Show full": a read-only modal with everything an approver decides on, uncut.

Pure, like bot/render/proposal.py. A message whose texts had to be clipped to Block Kit's limits
says so and offers Show full; this modal then shows the preview, every frozen argument (the values
that execution will use) and the agent's explanation in full, split across as many blocks as they
need, with the binding hash that an approval is bound to. The arguments read under their labels
and in the operation's terms (contracts/formats.py: "Amount: 450.00 USD"); under them, in small
print, each as it runs: its field name and JSON value ("amount_cents = 45000"; "(as above)" where
the line above already shows that JSON), so nothing the binding hash covers is hidden. Values are
``plain_text`` made inert (bot/render/inert.py), so they show character for character, except
that line breaks and invisible characters are shown by visible marks. The modal has no submit
button.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final

from pydantic import JsonValue

from bot.render.actions import SHOW_FULL_VIEW
from bot.render.blocks import Blocks, code, modal, section
from bot.render.inert import inert, inert_plain, own
from bot.render.words import RISK_LABELS, mention, reference
from contracts.formats import FieldFormat, Formats, field_label, show_value
from store.proposals import Proposal

__all__ = ["FULL_BLOCKS_MAX", "full_view", "full_views", "proposal_in_full"]

#: Slack's limit of blocks in a modal.
FULL_BLOCKS_MAX: Final = 100
#: Characters of plain text per section (Slack allows 3000).
_CHUNK: Final = 3000
#: What the small print says of a value shown above exactly as it runs.
_AS_ABOVE: Final = "(as above)"
#: Elements of a context block (Slack allows 10).
_CONTEXT_ELEMENTS: Final = 10


def full_view(proposal: Proposal, formats: Formats | None = None) -> dict[str, Any]:
    """The modal for one proposal, its arguments shown through ``formats``."""
    return full_views([proposal], title="Full proposal", formats_of=lambda _: formats or {})


def full_views(
    proposals: Sequence[Proposal],
    *,
    title: str = "Full proposals",
    formats_of: Callable[[str], Formats] | None = None,
) -> dict[str, Any]:
    """The modal for several proposals (a digest's items), one after another, each operation's
    arguments shown through ``formats_of(operation)``. Should they not fit in one modal, the
    last block says which are left out and where to see them."""
    blocks: Blocks = []
    for number, proposal in enumerate(proposals, 1):
        formats = formats_of(proposal.operation) if formats_of is not None else {}
        part = _proposal_blocks(proposal, number if len(proposals) > 1 else None, formats)
        if len(blocks) + len(part) > FULL_BLOCKS_MAX - 1:
            left = [p.id for p in proposals[number - 1 :]]
            blocks.append(
                section(
                    own(
                        f"*{len(left)} more proposals do not fit here.* See each with "
                        f"`/countersign show <id>`: {', '.join(code(i, 60) for i in left[:20])}"
                    )
                )
            )
            break
        blocks += part
    return modal(
        SHOW_FULL_VIEW,
        title,
        close="Close",
        blocks=blocks[:FULL_BLOCKS_MAX],
    )


def proposal_in_full(proposal: Proposal, heading: str, formats: Formats) -> Blocks:
    """Every block of :func:`full_view`'s for one proposal, uncut however many they are (the
    caller pages them); ``heading`` (Countersign's own mrkdwn) opens the first."""
    return _proposal_blocks(proposal, None, formats, heading=heading, cut=False)


def _proposal_blocks(
    proposal: Proposal,
    number: int | None,
    formats: Formats,
    *,
    heading: str | None = None,
    cut: bool = True,
) -> Blocks:
    # A proposal that alone exceeds the modal is cut (unless not ``cut``), and says so; ours
    # come first.
    if heading is None:
        heading = f"*{number}.* " if number is not None else ""
    ours: Blocks = [
        section(
            own(
                f"{heading}{RISK_LABELS[proposal.risk]}\n"
                f"Agent *{inert(proposal.agent)}* for {mention(proposal.requested_by)} · "
                f"{reference(proposal.id)}"
            )
        )
    ]
    preview = [("Title", proposal.preview.title)]
    preview += [(field.label, field.value) for field in proposal.preview.fields]
    arguments = proposal.arguments
    shown = [
        (field_label(formats, name), _shown(formats.get(name), value, arguments))
        for name, value in arguments.items()
    ]
    raw = [
        (name, exact if exact != value_shown else _AS_ABOVE)
        for (name, value), (_, value_shown) in zip(arguments.items(), shown, strict=True)
        for exact in [json.dumps(value, ensure_ascii=False, sort_keys=True)]
    ]
    values: Blocks = [
        _label("The preview, as the message shows it"),
        *_chunks(_lines(preview)),
        _label("The frozen arguments: exactly what runs"),
        *_chunks(_lines(shown) or "(none)"),
    ]
    if raw:
        values += _small_print(_lines(raw, " = "), "As the operation receives them (JSON): ")
    values += _small_print(_lines(_record(proposal)), f"{_FOR_THE_RECORD} ")
    if proposal.agent_reason:
        reason = inert_plain(proposal.agent_reason)
        values += [_label("The agent's explanation (unverified)"), *_chunks(reason)]
    room = FULL_BLOCKS_MAX - 1 - len(ours) - 1
    if cut and len(values) > room:
        values = [
            *values[: room - 1],
            section(
                own(
                    "*Too long for one modal*: the rest is left out here. The binding hash above "
                    "covers every argument."
                )
            ),
        ]
    return [*ours, *values, {"type": "divider"}]


#: Opens the small print that names the proposal as Countersign and the agent record it.
_FOR_THE_RECORD: Final = "For the record (as logs and the API name it):"


def _record(proposal: Proposal) -> list[tuple[str, str]]:
    """The names a developer looks a proposal up by: its id, its operation, the agent's run id
    and the binding hash an approval is bound to."""
    record = [("proposal", proposal.id), ("operation", proposal.operation)]
    if proposal.run_id:
        record.append(("the agent's run id", proposal.run_id))
    return [*record, ("binding hash", proposal.binding_hash)]


def _label(text: str) -> dict[str, Any]:
    return {
        "type": "context",
        "elements": [{"type": "mrkdwn", "text": f"*{inert(text)[:2900]}*", "verbatim": True}],
    }


def _shown(fmt: FieldFormat | None, value: JsonValue, arguments: Mapping[str, JsonValue]) -> str:
    """A value in the operation's terms where it declares a format, else its JSON."""
    if fmt is not None and fmt.kind != "text":
        return show_value(fmt, value, arguments)
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


def _lines(pairs: list[tuple[str, str]], between: str = ": ") -> str:
    """``name: value`` lines, each made inert (one line each, so no value can start another)."""
    return "\n".join(f"{inert_plain(name)}{between}{inert_plain(value)}" for name, value in pairs)


def _small_print(text: str, lead: str) -> Blocks:
    """``text`` (inert lines) in full, as context blocks: plain text elements of at most 3000
    characters, ten to a block; ``lead`` opens the first."""
    pieces = [block["text"]["text"] for block in _chunks(f"{lead}\n{text}" if lead else text)]
    return [
        {
            "type": "context",
            "elements": [
                {"type": "plain_text", "text": piece, "emoji": False}
                for piece in pieces[start : start + _CONTEXT_ELEMENTS]
            ],
        }
        for start in range(0, len(pieces), _CONTEXT_ELEMENTS)
    ]


def _chunks(text: str) -> Blocks:
    """``text`` (inert lines) in full, as plain text sections of at most 3000 characters, cut
    between lines where a line fits."""
    pieces: list[str] = []
    for line in (text or " ").split("\n"):
        parts = [line[start : start + _CHUNK] for start in range(0, len(line), _CHUNK)] or [" "]
        for part in parts:
            if pieces and len(pieces[-1]) + 1 + len(part) <= _CHUNK:
                pieces[-1] += "\n" + part
            else:
                pieces.append(part)
    return [
        {"type": "section", "text": {"type": "plain_text", "text": piece, "emoji": False}}
        for piece in pieces
    ]
