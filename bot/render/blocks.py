"""Block Kit's building blocks: the limits Slack sets (and the few Countersign sets), and the
texts, blocks, elements, messages and modals every renderer is made of. Pure, like all of
bot/render/.

mrkdwn takes :class:`~bot.render.inert.Mrkdwn` only (Countersign's words, or an agent's made
inert), and is sent ``verbatim`` so Slack adds no links. Texts are clipped to Block Kit's limits
with a visible note (:data:`CLIPPED`); a message with any clipped text says it is shown in part
and offers "Show full" (:func:`shown_in_part`, bot/render/full.py).

A renderer that uses a few of these imports them by name; one written in much of the vocabulary
imports the module as ``kit`` (``kit.section``, ``kit.SECTION_MAX``; the name ``blocks`` is the
list each renderer builds) and the types ``Blocks`` and ``Message`` by name.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, Final, overload

from pydantic import JsonValue

from bot.render.actions import SHOW_FULL
from bot.render.inert import Mrkdwn, inert, inert_plain, inert_quote, own

__all__ = [
    "BLOCKS_MAX",
    "BUTTON_MAX",
    "CLIPPED",
    "CONFIRM_TEXT_MAX",
    "CONFIRM_TITLE_MAX",
    "FALLBACK_MAX",
    "FIELDS_PER_SECTION",
    "FIELD_MAX",
    "HEADER_MAX",
    "MODAL_TITLE_MAX",
    "REASON_MAX",
    "SECTION_MAX",
    "Blocks",
    "Message",
    "clip",
    "code",
    "code_block",
    "compact",
    "context",
    "escape",
    "field_sections",
    "field_text",
    "header",
    "is_clipped",
    "message",
    "modal",
    "packed",
    "packed_sections",
    "plain",
    "quote",
    "said",
    "section",
    "shown_in_part",
    "text_input",
]

#: Appended wherever a text was cut to fit.
CLIPPED: Final = "… (clipped)"

# Block Kit limits (https://docs.slack.dev/reference/block-kit/).
HEADER_MAX: Final = 150
SECTION_MAX: Final = 3000
FIELD_MAX: Final = 2000
FIELDS_PER_SECTION: Final = 10
BLOCKS_MAX: Final = 50
BUTTON_MAX: Final = 75
CONFIRM_TITLE_MAX: Final = 100
CONFIRM_TEXT_MAX: Final = 300
MODAL_TITLE_MAX: Final = 24
#: Ours, not Slack's: the fallback text shows in notifications, where less is more.
FALLBACK_MAX: Final = 300
#: The longest rejection reason the modal accepts (Slack allows up to 3000).
REASON_MAX: Final = 1000

Message = dict[str, Any]
Blocks = list[dict[str, Any]]

# --- texts ---------------------------------------------------------------------------------------


def escape(text: str) -> str:
    """Escape the three characters Slack treats as markup, so the text shows as written."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


@overload
def clip(text: Mrkdwn, limit: int) -> Mrkdwn: ...
@overload
def clip(text: str, limit: int) -> str: ...
def clip(text: str, limit: int) -> str:
    """``text`` if it fits in ``limit`` characters; otherwise cut, ending with :data:`CLIPPED`
    (Slack text stays Slack text: a cut adds nothing of anyone's).

    The cut never ends inside an escape (``&amp;``) or a Slack token (``<@U123>``).
    """
    if len(text) <= limit:
        return text
    cut = text[: max(0, limit - len(CLIPPED))]
    ampersand = cut.rfind("&")
    if ampersand != -1 and ";" not in cut[ampersand:]:
        cut = cut[:ampersand]
    bracket = cut.rfind("<")
    if bracket != -1 and ">" not in cut[bracket:]:
        cut = cut[:bracket]
    return own(cut + CLIPPED) if isinstance(text, Mrkdwn) else cut + CLIPPED


def _clip_plain(text: str, limit: int) -> str:
    """Clip a plain_text value (shown as is: no escapes or tokens to respect)."""
    return text if len(text) <= limit else text[: limit - len(CLIPPED)] + CLIPPED


def code(value: str, limit: int) -> Mrkdwn:
    """``value`` as inline code on one line, made inert (backticks become look-alikes, so it
    cannot break out)."""
    return own(f"`{clip(inert(value), limit - 2)}`")


def code_block(value: str, limit: int) -> Mrkdwn:
    """``value`` as a block of code, each line made inert."""
    inner = "\n".join(inert(line) for line in value.splitlines()) or " "
    return own(f"```\n{clip(inner, limit - 8)}\n```")


def quote(value: str, limit: int) -> Mrkdwn:
    """Someone else's words as a block quote, every line marked and inert, so they cannot pose
    as ours."""
    return clip(inert_quote(value), limit)


def compact(value: JsonValue) -> str:
    """A JSON value on one line (a string as it is); the caller makes it inert."""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(", ", ": "))


# --- blocks --------------------------------------------------------------------------------------


def _mrkdwn(text: Mrkdwn, limit: int = SECTION_MAX) -> dict[str, Any]:
    return {"type": "mrkdwn", "text": clip(text, limit), "verbatim": True}


def plain(text: str, limit: int) -> dict[str, Any]:
    """Countersign's own plain text (button labels, modal titles)."""
    return {"type": "plain_text", "text": _clip_plain(text, limit), "emoji": True}


def said(text: str, limit: int) -> dict[str, Any]:
    """Plain text that holds agent-supplied values: inert, and no emoji from shortcodes."""
    return {"type": "plain_text", "text": _clip_plain(inert_plain(text), limit), "emoji": False}


def button(action_id: str, text: str, value: str, style: str | None = None) -> dict[str, Any]:
    """A button labelled ``text`` whose value is ``value`` (an id only, never more)."""
    element: dict[str, Any] = {
        "type": "button",
        "action_id": action_id,
        "text": plain(text, BUTTON_MAX),
        "value": value,
    }
    if style is not None:
        element["style"] = style
    return element


def section(text: Mrkdwn) -> dict[str, Any]:
    return {"type": "section", "text": _mrkdwn(text)}


def modal(
    callback_id: str,
    title: str,
    blocks: Blocks,
    *,
    metadata: str | None = None,
    submit: str | None = None,
    close: str = "Cancel",
) -> dict[str, Any]:
    """A modal of ``blocks`` already made; its title and buttons are Countersign's words, and
    ``metadata`` (its private_metadata) names what it is about."""
    view: dict[str, Any] = {"type": "modal", "callback_id": callback_id}
    if metadata is not None:
        view["private_metadata"] = metadata
    view["title"] = plain(title, MODAL_TITLE_MAX)
    if submit is not None:
        view["submit"] = plain(submit, MODAL_TITLE_MAX)
    view["close"] = plain(close, MODAL_TITLE_MAX)
    view["blocks"] = blocks
    return view


def text_input(
    block_id: str,
    *,
    label: str,
    hint: str,
    most: int,
    optional: bool = False,
    placeholder: str | None = None,
) -> dict[str, Any]:
    """A modal's input of free text, several lines of at most ``most`` characters; ``block_id``
    is its action id too (bot/slack/listeners.py text_submission_listener reads it there)."""
    element: dict[str, Any] = {
        "type": "plain_text_input",
        "action_id": block_id,
        "multiline": True,
        "max_length": most,
    }
    if placeholder is not None:
        element["placeholder"] = plain(placeholder, 150)
    return {
        "type": "input",
        "block_id": block_id,
        "optional": optional,
        "label": plain(label, 2000),
        "hint": plain(hint, 2000),
        "element": element,
    }


def context(*texts: Mrkdwn) -> dict[str, Any]:
    return {"type": "context", "elements": [_mrkdwn(text, FIELD_MAX) for text in texts]}


def header(title: str) -> dict[str, Any]:
    return {"type": "header", "text": said(title or "(untitled)", HEADER_MAX)}


def field_text(label: str, value: str) -> Mrkdwn:
    shown_label = clip(inert(label), 200)
    return own(f"*{shown_label}*\n{clip(inert(value) or ' ', FIELD_MAX - len(shown_label) - 3)}")


def is_clipped(blocks: Blocks) -> bool:
    """Whether any text in ``blocks`` was cut to fit (it carries :data:`CLIPPED`). Agent text
    that contains the marker itself only makes a message look clipped: safe, never silent."""
    return CLIPPED in json.dumps(blocks, ensure_ascii=False)


def shown_in_part(
    value: str, *, action_id: str = SHOW_FULL, what: str = "some values above"
) -> Blocks:
    """The note that a message is shown in part, and the button that shows all of it."""
    return [
        context(
            own(
                f":scissors: *Shown in part*: {what} are longer than Slack shows in a message and"
                " are cut where marked. *Show full* shows every value in full, exactly as it will"
                " be used."
            )
        ),
        {
            "type": "actions",
            "block_id": "show_full",
            "elements": [
                {
                    "type": "button",
                    "action_id": action_id,
                    "text": plain("Show full", BUTTON_MAX),
                    "value": value,
                }
            ],
        },
    ]


def field_sections(texts: Sequence[Mrkdwn], *, budget: int) -> Blocks:
    """``texts`` as section fields, ten to a section, in at most ``budget`` sections."""
    texts = list(texts)
    capacity = max(budget, 1) * FIELDS_PER_SECTION
    if len(texts) > capacity:
        hidden = len(texts) - capacity + 1
        texts = [*texts[: capacity - 1], own(f"_{hidden} more not shown_ {CLIPPED}")]
    return [
        {
            "type": "section",
            "fields": [
                _mrkdwn(text, FIELD_MAX) for text in texts[start : start + FIELDS_PER_SECTION]
            ],
        }
        for start in range(0, len(texts), FIELDS_PER_SECTION)
    ]


def packed(texts: Sequence[str]) -> list[str]:
    """``texts`` joined (by a blank line) into as few section texts as they fit in."""
    sections: list[str] = []
    for text in texts:
        if sections and len(sections[-1]) + 2 + len(text) <= SECTION_MAX:
            sections[-1] += "\n\n" + text
        else:
            sections.append(text)
    return sections


def packed_sections(texts: Sequence[str], *, budget: int) -> Blocks:
    """``texts`` as :func:`packed` sections, at most ``budget`` of them: the last one left says
    how many texts are not shown."""
    sections = packed(texts)
    if len(sections) > budget:
        hidden = sum(s.count("\n\n") + 1 for s in sections[budget - 1 :])
        sections = [*sections[: budget - 1], f"_{hidden} more not shown here_ {CLIPPED}"]
    return [section(own(text)) for text in sections]


def message(text: Mrkdwn, blocks: Blocks) -> Message:
    return {"text": clip(text, FALLBACK_MAX), "blocks": blocks[:BLOCKS_MAX]}
