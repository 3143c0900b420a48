"""The sandbox page's emoji names: ``python -m tests.sandbox.emoji_table`` (needs ``pip install
emoji``) writes ``bot/sandbox/static/emoji.json``, which maps each ``:name:`` Slack understands
to its character.

The names are the emoji package's English names and their aliases (GitHub's, which Slack
shares), without skin tones, plus the few names Slack spells its own way.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Final

TABLE: Final = Path(__file__).parents[2] / "bot" / "sandbox" / "static" / "emoji.json"

#: Names Slack uses that the emoji package spells otherwise.
SLACK_NAMES: Final = {
    "large_blue_circle": "\U0001f535",
    "large_orange_circle": "\U0001f7e0",
    "large_yellow_circle": "\U0001f7e1",
    "large_green_circle": "\U0001f7e2",
    "large_purple_circle": "\U0001f7e3",
    "large_brown_circle": "\U0001f7e4",
    "large_red_square": "\U0001f7e5",
    "large_blue_square": "\U0001f7e6",
    "large_orange_square": "\U0001f7e7",
    "large_yellow_square": "\U0001f7e8",
    "large_green_square": "\U0001f7e9",
    "large_purple_square": "\U0001f7ea",
    "large_brown_square": "\U0001f7eb",
    "simple_smile": "\U0001f642",
    "slightly_smiling_face": "\U0001f642",
}


def table() -> dict[str, str]:
    import emoji  # only this generator needs it

    names: dict[str, str] = {}
    for character, data in emoji.EMOJI_DATA.items():
        if data.get("status") != emoji.STATUS["fully_qualified"]:
            continue
        for name in [data["en"], *data.get("alias", [])]:
            name = name.strip(":").lower()
            if "skin_tone" not in name:
                names.setdefault(name, character)
    names.update(SLACK_NAMES)
    return dict(sorted(names.items()))


if __name__ == "__main__":
    target = Path(sys.argv[1]) if len(sys.argv) > 1 else TABLE
    text = json.dumps(table(), ensure_ascii=False, separators=(",", ":"))
    target.write_text(text + "\n", encoding="utf-8")
    print(f"wrote {target}")
