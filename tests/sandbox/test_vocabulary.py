"""The sandbox page knows everything Countersign sends: every Block Kit type named in bot/ and
every emoji name in its strings (the browser tests show them drawn)."""

from __future__ import annotations

import io
import json
import re
import tokenize
from collections.abc import Iterator
from pathlib import Path
from typing import Final

ROOT: Final = Path(__file__).parents[2]
STATIC: Final = ROOT / "bot" / "sandbox" / "static"
#: "type" values in bot/ that are not Block Kit blocks, elements or text objects
NOT_BLOCK_KIT: Final = {
    "modal", "home", "message", "view", "view_submission", "block_actions", "event_callback",
    "app_home_opened", "hello", "object", "string", "number", "integer", "boolean", "array",
    "http", "null",
}  # fmt: skip
#: words between colons in bot/'s strings that are no emoji: SQLite's in-memory database
NOT_EMOJI: Final = {"memory"}


def countersign_sources() -> Iterator[Path]:
    for path in sorted((ROOT / "bot").rglob("*.py")):
        if "sandbox" not in path.parts:
            yield path


def strings(path: Path) -> Iterator[str]:
    source = path.read_text(encoding="utf-8")
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type == tokenize.STRING or token.type == getattr(tokenize, "FSTRING_MIDDLE", -1):
            yield token.string


def test_the_page_draws_every_block_kit_type_countersign_names() -> None:
    named = {
        found
        for path in countersign_sources()
        for found in re.findall(r'"type": "([a-z_]+)"', path.read_text(encoding="utf-8"))
    }
    script = (STATIC / "app.js").read_text(encoding="utf-8")
    missing = {kind for kind in named - NOT_BLOCK_KIT if f'"{kind}"' not in script}
    assert {"number_input", "static_select", "checkboxes", "radio_buttons"} <= named
    assert missing == set()


def test_every_emoji_name_countersign_writes_is_in_the_pages_table() -> None:
    table = json.loads((STATIC / "emoji.json").read_text(encoding="utf-8"))
    used = {
        name
        for path in countersign_sources()
        for text in strings(path)
        for name in re.findall(r"(?<![:\w]):([a-z][a-z0-9_+-]*):(?![`\w:])", text)
        if not re.fullmatch(r"[0-9a-f]+", name)  # part of an IPv6 address
    } - NOT_EMOJI
    assert {"white_check_mark", "alarm_clock", "red_circle"} <= used
    assert sorted(used - table.keys()) == []


def test_the_pages_emoji_table_has_slacks_names() -> None:
    table = json.loads((STATIC / "emoji.json").read_text(encoding="utf-8"))
    assert table["large_orange_circle"] == "\U0001f7e0"
    assert table["white_check_mark"] == "\u2705"
    assert table["+1"] == table["thumbsup"] == "\U0001f44d"
    assert len(table) > 1500
