"""Agent-supplied text, made inert for Slack: shown as written, never interpreted.

Everything an agent writes (request values in previews, its reason, its run id, an escalation's
summary, a webhook preview filled from its values) passes through here before it reaches a Block
Kit text. The agent is the party under control, so its text must never look like Countersign's
own lines, mention or link anyone, or hide what it says. Slack has no escape character for
mrkdwn, so the approach is substitution by visible, similar-looking characters, never by
invisible ones (no zero-width spaces):

========================  ====================================================================
what Slack would do       what :func:`inert` does
========================  ====================================================================
mentions, links           ``&``, ``<``, ``>`` become ``&amp;``, ``&lt;``, ``&gt;`` (Slack's own
(``<@U…>``, ``<!here>``)  escapes), so no ``<…>`` token can form
bold, italic, strike,     ``*`` ``_`` ``~`` `````` become U+2217, U+02CD, U+223C, U+02CB unless
code                      both neighbours are letters or digits (``pay_123`` stays: Slack opens and
                          closes formatting only next to a space, punctuation or the text's ends)
emoji shortcodes          in a word holding a ``:name:``, each colon but the last becomes U+2236
auto-linked URLs          ``://`` becomes U+2236 ``//``; ``www.`` gets U+2024 for its dot
a line that looks like    line breaks (``\\n``, ``\\r``, U+2028, …) become a visible ``⏎``; a
ours, a block quote       leading ``>`` becomes U+FF1E
control, bidirectional,   shown as their code, ``\\u202e``: the approver sees that they are
zero-width, invisible     there, and they cannot reorder or hide what follows
emoji characters          shown as their code too (``\\U0001f534``): Countersign's own lines
                          begin with emoji (the risk class, "Approved by"), agent text cannot
========================  ====================================================================

Agent text is a type: a Block Kit mrkdwn text takes a :class:`Mrkdwn`, which only
:func:`inert` and :func:`inert_quote` make out of an agent's text and only :func:`own` makes out
of Countersign's words, so ``mypy --strict`` rejects a renderer that hands a plain ``str`` (what
an agent wrote, or anything built from it) to Slack. What ``own()`` is given is read by a test
for agent-fed values that did not pass through here (tests/bot/render/test_agent_text_static.py),
and every renderer is walked with hostile values (tests/bot/render/test_hostile_values.py).

Countersign's own lines are made of what agent text can no longer produce (bold labels, emoji,
mentions of people, Slack date tokens), and are rendered in their own blocks; agent text appears
only in its labelled place. Multi-line agent text is shown as a block quote whose every line is
marked (:func:`inert_quote`), so it cannot start a line outside the quote.

:func:`inert_plain` is the same for ``plain_text`` objects (headers, modal text, button
confirmations), which Slack does not parse for markup: only line breaks, invisible characters
and emoji are replaced there, and such objects are sent with ``emoji: false``. The "Show full"
modal uses it, so the values it shows are the frozen ones character for character, except the
invisible and the emoji.
"""

from __future__ import annotations

import re
import unicodedata
from typing import Final

__all__ = [
    "LINE_BREAK",
    "MARKERS",
    "SHORTCODE",
    "Mrkdwn",
    "inert",
    "inert_plain",
    "inert_quote",
    "own",
    "visible",
]

#: What a line break in agent text shows as.
LINE_BREAK: Final = "⏎"

#: Slack's formatting markers and the look-alikes that replace them.
MARKERS: Final = {"*": "\u2217", "_": "\u02cd", "~": "\u223c", "`": "\u02cb"}

#: A colon-delimited name Slack could show as an emoji (standard or custom).
SHORTCODE: Final = re.compile(r":[^\s:]+:")

_COLON: Final = "\u2236"
_ONE_DOT: Final = "\u2024"
#: a web address's "www." (Slack links it without a scheme), and a run without spaces
_WWW: Final = re.compile(r"(?i)(www)\.")
_RUN: Final = re.compile(r"\S+")
_QUOTE_MARK: Final = "\uff1e"
#: Letters that render as nothing though Unicode calls them letters or symbols.
_INVISIBLE: Final = frozenset("\u115f\u1160\u3164\uffa0\u2800\u180e\u034f\u17b4\u17b5")
#: Categories shown by their code: control, format (bidi, zero-width), separators other than the
#: space, surrogates, private use, unassigned.
_HIDDEN_CATEGORIES: Final = frozenset({"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"})
_LINE_BREAKS: Final = re.compile(r"\r\n|[\n\r\v\f\x1c\x1d\x1e\x85\u2028\u2029]")


def _pictograph(char: str, category: str) -> bool:
    """An emoji (or a symbol shown as one): Countersign's own lines start with such symbols
    (the risk class, "Approved by"), so agent text shows them by their code instead."""
    point = ord(char)
    if 0x1F000 <= point <= 0x1FAFF:  # emoji, modifiers, regional indicators (flags)
        return True
    if point in (0x3030, 0x303D, 0x3297, 0x3299):
        return True
    return category == "So" and 0x2190 <= point <= 0x2BFF  # arrows, dingbats, misc symbols


def _hidden(char: str) -> bool:
    if char in _INVISIBLE:
        return True
    point = ord(char)
    if 0xFE00 <= point <= 0xFE0F or 0xE0100 <= point <= 0xE01EF:  # variation selectors
        return True
    category = unicodedata.category(char)
    if category in _HIDDEN_CATEGORIES or _pictograph(char, category):
        return True
    return category == "Zs" and char != " "


def _code_point(char: str) -> str:
    point = ord(char)
    return f"\\u{point:04x}" if point <= 0xFFFF else f"\\U{point:08x}"


class Mrkdwn(str):
    """Slack mrkdwn that is safe to send: Countersign's own words (:func:`own`) or an agent's
    made inert (:func:`inert`, :func:`inert_quote`). Block Kit's mrkdwn builders take only this
    type, so ``mypy --strict`` rejects agent text (a plain ``str``) where Slack text is
    expected: it gets there only through the inert renderer."""

    __slots__ = ()


def own(text: str) -> Mrkdwn:
    """Countersign's own words as Slack text. Whatever an agent wrote that they hold must have
    been made inert first (tests/bot/render/test_agent_text_static.py reads every renderer for
    an agent-fed value reaching Slack text any other way)."""
    return Mrkdwn(text)


def visible(text: str) -> str:
    """``text`` on one line with every line break shown as ``⏎`` and every control,
    bidirectional, zero-width or otherwise invisible character, every space other than U+0020
    and every emoji shown as its code (``\\u202e``); so is a ``⏎`` of the text's own."""
    if text.isascii() and text.isprintable():
        # printable ASCII holds no line break and nothing hidden (the only space is U+0020)
        return text
    return LINE_BREAK.join(
        "".join(_code_point(char) if _hidden(char) else char for char in line)
        for line in _LINE_BREAKS.split(text)
    )


def inert_plain(text: str) -> str:
    """``text`` for a ``plain_text`` object (sent with ``emoji: false``): one line, nothing
    invisible, no emoji. Slack shows plain text as written, so nothing else changes."""
    return visible(text)


def inert(text: str) -> Mrkdwn:
    """``text`` for a mrkdwn object: one line that Slack shows as written, with no formatting,
    emoji, mention, link, quote or invisible character it could interpret (see the table above).
    """
    text = visible(text)
    text = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    text = _neutral_markers(text)
    # in ASCII text, "www." is found as the pattern finds it: most texts skip the pattern
    if not text.isascii() or "www." in text.lower():
        text = _WWW.sub(rf"\1{_ONE_DOT}", text)
    text = text.replace("://", f"{_COLON}//")
    text = _break_shortcodes(text)
    stripped = text.lstrip(" ")
    if stripped.startswith("&gt;"):
        text = text[: len(text) - len(stripped)] + _QUOTE_MARK + stripped[len("&gt;") :]
    return Mrkdwn(text)


def inert_quote(text: str) -> Mrkdwn:
    """Multi-line ``text`` as a block quote for mrkdwn: each of its lines made :func:`inert`
    and marked ``>``, so none of them can pose as a line of Countersign's."""
    lines = _LINE_BREAKS.split(text.strip()) or [""]
    return Mrkdwn("\n".join(f">{inert(line)}" for line in lines))


def _neutral_markers(text: str) -> str:
    if not any(marker in text for marker in MARKERS):
        return text
    out: list[str] = []
    last = len(text) - 1
    for index, char in enumerate(text):
        look_alike = MARKERS.get(char)
        if look_alike is None:
            out.append(char)
            continue
        inside = 0 < index < last and text[index - 1].isalnum() and text[index + 1].isalnum()
        out.append(char if inside else look_alike)
    return "".join(out)


def _break_shortcodes(text: str) -> str:
    # In each run without spaces that holds a ``:name:``, every colon but the last becomes a
    # look-alike: no two real colons are left to enclose a name. Linear, however many colons.
    if text.count(":") < 2:  # no run holds two colons: nothing to break (most texts)
        return text

    def token(match: re.Match[str]) -> str:
        word = match.group()
        if SHORTCODE.search(word) is None:
            return word
        last = word.rfind(":")
        return word[:last].replace(":", _COLON) + word[last:]

    return _RUN.sub(token, text)
