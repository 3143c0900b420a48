"""Durations as people write them in configuration: ``"90s"``, ``"30m"``, ``"2h"``, ``"1d"``.

Units may be combined from largest to smallest, each at most once: ``"1h30m"``, ``"1d12h"``.
Only whole numbers of ASCII digits are accepted; there are no fractions, signs or spaces.
"""

from __future__ import annotations

import re
from datetime import timedelta

from contracts.toml_text import as_toml

__all__ = ["format_duration", "parse_duration", "spoken_duration"]

_DURATION = re.compile(r"(?:([0-9]+)d)?(?:([0-9]+)h)?(?:([0-9]+)m)?(?:([0-9]+)s)?")
_EXPECTED = (
    "expected whole numbers with units d, h, m or s, largest first, "
    "such as '90s', '30m', '2h', '1d' or '1h30m'"
)


def parse_duration(text: str) -> timedelta:
    """The timedelta ``text`` names; raise ValueError quoting it and the expected form."""
    if not isinstance(text, str):
        raise ValueError(f"a duration is text in quotes; {_EXPECTED}, got {as_toml(text)}")
    match = _DURATION.fullmatch(text)
    if not text or match is None:
        raise ValueError(f"invalid duration {text!r}: {_EXPECTED}")
    days, hours, minutes, seconds = (int(part) if part else 0 for part in match.groups())
    try:
        return timedelta(days=days, hours=hours, minutes=minutes, seconds=seconds)
    except OverflowError:
        raise ValueError(f"duration {text!r} is too long") from None


def format_duration(duration: timedelta) -> str:
    """The shortest text :func:`parse_duration` reads back as ``duration`` (whole seconds)."""
    if duration < timedelta(0):
        raise ValueError(f"cannot format a negative duration ({duration})")
    if duration.microseconds:
        raise ValueError(f"cannot format a duration with a fraction of a second ({duration})")
    total = duration.days * 86_400 + duration.seconds
    if total == 0:
        return "0s"
    minutes, seconds = divmod(total, 60)
    hours, minutes = divmod(minutes, 60)
    days, hours = divmod(hours, 24)
    parts = ((days, "d"), (hours, "h"), (minutes, "m"), (seconds, "s"))
    return "".join(f"{amount}{unit}" for amount, unit in parts if amount)


def _count(amount: int, unit: str) -> str:
    return f"{amount:,} {unit}{'' if amount == 1 else 's'}"


def spoken_duration(seconds: float) -> str:
    """A duration as people say it, to the minute (to the second under a minute): "1 hour",
    "90 minutes", "2 hours 30 minutes", "7 days", "1 day 12 hours", "45 seconds". Under two
    hours it counts minutes ("65 minutes"), as people do; the sign is ignored."""
    if abs(seconds) < 59.5 and abs(seconds) != int(abs(seconds)):  # a timeout of 0.3 s
        return f"{round(abs(seconds), 1):g} seconds"
    total = round(abs(seconds))
    if total < 60:
        return _count(total, "second")
    minutes = total // 60 if total < 7_200 else round(total / 60)
    if minutes < 120 and minutes % 60:
        return _count(minutes, "minute")
    days, rest = divmod(minutes, 1_440)
    hours, minutes = divmod(rest, 60)
    if days:
        return _count(days, "day") + (f" {_count(hours, 'hour')}" if hours else "")
    return _count(hours, "hour") + (f" {_count(minutes, 'minute')}" if minutes else "")
