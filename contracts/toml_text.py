"""A value read from the configuration file, written back as TOML writes it, for a problem to
quote: ``true`` (not ``True``), ``'30m'``, ``[1, 2]``, ``{ after = '50%', approvers = [...] }``.

A person editing the file reads what they wrote, in its own spelling. Long values are shortened:
text after 60 characters, an array or a table after 5 entries, and what is nested more than
two deep as ``[...]`` or ``{...}``.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from datetime import date, datetime, time
from typing import Final

__all__ = ["as_toml"]

_LONGEST_TEXT: Final = 60
_MOST_ENTRIES: Final = 5
_DEEPEST: Final = 2
_BARE_KEY: Final = re.compile(r"[A-Za-z0-9_-]+")


def as_toml(value: object) -> str:
    """``value`` as a TOML file writes it, shortened when long."""
    return _written(value, 0)


def _written(value: object, depth: int) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return repr(value)
    if isinstance(value, str):
        return _text(value)
    if isinstance(value, datetime | date | time):
        return value.isoformat()
    if isinstance(value, list | tuple):
        if depth >= _DEEPEST:
            return "[...]"
        items = [_written(item, depth + 1) for item in value[:_MOST_ENTRIES]]
        return "[" + ", ".join(items) + (", ...]" if len(value) > _MOST_ENTRIES else "]")
    if isinstance(value, Mapping):
        if not value:
            return "{}"
        if depth >= _DEEPEST:
            return "{...}"
        entries = [
            f"{_key(key)} = {_written(item, depth + 1)}"
            for key, item in list(value.items())[:_MOST_ENTRIES]
        ]
        more = ", ..." if len(value) > _MOST_ENTRIES else ""
        return "{ " + ", ".join(entries) + more + " }"
    return repr(value)


def _text(value: str) -> str:
    """A literal string ('...') where one can hold it, else a basic string ("...")."""
    if len(value) > _LONGEST_TEXT:
        value = value[: _LONGEST_TEXT - 3] + "..."
    if "'" not in value and all(char.isprintable() for char in value):
        return f"'{value}'"
    return json.dumps(value, ensure_ascii=False)


def _key(key: object) -> str:
    text = str(key)
    return text if _BARE_KEY.fullmatch(text) else _text(text)
