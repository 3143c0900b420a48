"""Block Kit for "Show full": a read-only modal with everything an approver decides on, uncut.

Pure, like bot/render/proposal.py. A message whose texts had to be clipped to Block Kit's limits
says so and offers Show full; this modal then shows the preview, every frozen argument (the values
that execution will use) and the agent's explanation in full, split across as many blocks as they
need, with the binding hash that an approval is bound to. Values are ``plain_text`` made inert
(bot/render/inert.py), so they show character for character, except that line breaks and invisible
characters are shown by visible marks. The modal has no submit button.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, Final

from bot.actions import SHOW_FULL_VIEW
from bot.render.inert import inert, inert_plain
from bot.render.proposal import (
    MODAL_TITLE_MAX,
    RISK_LABELS,
    Blocks,
    code,
    escape,
    mention,
    plain,
    section,
)
from store.base import Proposal

__all__ = ["FULL_BLOCKS_MAX", "full_view", "full_views"]

#: Slack's limit of blocks in a modal.
FULL_BLOCKS_MAX: Final = 100
#: Characters of plain text per section (Slack allows 3000).
_CHUNK: Final = 3000


def full_view(proposal: Proposal) -> dict[str, Any]:
    """The modal for one proposal."""
    return full_views([proposal], title="Full proposal")


def full_views(proposals: Sequence[Proposal], *, title: str = "Full proposals") -> dict[str, Any]:
    """The modal for several proposals (a digest's items), one after another. Should they not
    fit in one modal, the last block says which are left out and where to see them."""
    blocks: Blocks = []
    for number, proposal in enumerate(proposals, 1):
        part = _proposal_blocks(proposal, number if len(proposals) > 1 else None)
        if len(blocks) + len(part) > FULL_BLOCKS_MAX - 1:
            left = [p.id for p in proposals[number - 1 :]]
            blocks.append(
                section(
                    f"*{len(left)} more proposals do not fit here.* See each with "
                    f"`/countersign show <id>`: {', '.join(code(i, 60) for i in left[:20])}"
                )
            )
            break
        blocks += part
    return {
        "type": "modal",
        "callback_id": SHOW_FULL_VIEW,
        "title": plain(title, MODAL_TITLE_MAX),
        "close": plain("Close", MODAL_TITLE_MAX),
        "blocks": blocks[:FULL_BLOCKS_MAX],
    }


def _proposal_blocks(proposal: Proposal, number: int | None) -> Blocks:
    # A proposal that alone exceeds the modal is cut, and says so; ours come first.
    heading = f"*{number}.* " if number is not None else ""
    ours: Blocks = [
        section(
            f"{heading}Operation {code(proposal.operation, 200)} · id {code(proposal.id, 60)} · "
            f"{RISK_LABELS[proposal.risk]}\n"
            f"Agent *{escape(proposal.agent)}* for {mention(proposal.requested_by)}\n"
            f"*Binding hash* (what an approval is bound to) {code(proposal.binding_hash, 80)}"
        )
    ]
    preview = [("Title", proposal.preview.title)]
    preview += [(field.label, field.value) for field in proposal.preview.fields]
    arguments = [
        (name, json.dumps(value, ensure_ascii=False, sort_keys=True))
        for name, value in proposal.arguments.items()
    ]
    values: Blocks = [
        _label("The preview, as the message shows it"),
        *_chunks(_lines(preview)),
        _label("The frozen arguments: exactly what runs (JSON values)"),
        *_chunks(_lines(arguments) or "(none)"),
    ]
    if proposal.agent_reason:
        reason = inert_plain(proposal.agent_reason)
        values += [_label("The agent's explanation (unverified)"), *_chunks(reason)]
    room = FULL_BLOCKS_MAX - 1 - len(ours) - 1
    if len(values) > room:
        values = [
            *values[: room - 1],
            section(
                "*Too long for one modal*: the rest is left out here. The binding hash above "
                "covers every argument."
            ),
        ]
    return [*ours, *values, {"type": "divider"}]


def _label(text: str) -> dict[str, Any]:
    return {
        "type": "context",
        "elements": [{"type": "mrkdwn", "text": f"*{inert(text)[:2900]}*", "verbatim": True}],
    }


def _lines(pairs: list[tuple[str, str]]) -> str:
    """``name: value`` lines, each made inert (one line each, so no value can start another)."""
    return "\n".join(f"{inert_plain(name)}: {inert_plain(value)}" for name, value in pairs)


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
