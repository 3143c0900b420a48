"""Durations in configuration: whole units, largest first, read back exactly as written."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from contracts.durations import format_duration, parse_duration, spoken_duration


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("90s", timedelta(seconds=90)),
        ("30m", timedelta(minutes=30)),
        ("2h", timedelta(hours=2)),
        ("1d", timedelta(days=1)),
        ("1h30m", timedelta(hours=1, minutes=30)),
        ("1d12h5m3s", timedelta(days=1, hours=12, minutes=5, seconds=3)),
        ("0s", timedelta(0)),
        ("007m", timedelta(minutes=7)),
    ],
)
def test_parse_duration_reads_whole_units(text: str, expected: timedelta) -> None:
    assert parse_duration(text) == expected


@pytest.mark.parametrize(
    "text",
    ["", "30", "m", "1.5h", "-1h", "+1h", "1 h", " 1h", "1h ", "30M", "1w", "30m1h", "1h1h", "٣m"],
)
def test_parse_duration_rejects_anything_else_quoting_it(text: str) -> None:
    with pytest.raises(ValueError) as caught:
        parse_duration(text)

    assert str(caught.value).startswith(f"invalid duration {text!r}: expected whole numbers")


def test_parse_duration_rejects_a_non_string() -> None:
    with pytest.raises(ValueError, match=r"a duration is text in quotes; .*, got 60$"):
        parse_duration(60)  # type: ignore[arg-type]


def test_parse_duration_rejects_a_duration_too_long_to_represent() -> None:
    with pytest.raises(ValueError, match="duration '9999999999d' is too long"):
        parse_duration("9999999999d")


@pytest.mark.parametrize(
    ("duration", "text"),
    [
        (timedelta(0), "0s"),
        (timedelta(seconds=90), "1m30s"),
        (timedelta(hours=1), "1h"),
        (timedelta(days=7), "7d"),
        (timedelta(days=1, seconds=1), "1d1s"),
    ],
)
def test_format_duration_writes_the_shortest_form(duration: timedelta, text: str) -> None:
    assert format_duration(duration) == text


@pytest.mark.parametrize(
    "duration", [timedelta(seconds=-1), timedelta(milliseconds=1500)], ids=["negative", "fraction"]
)
def test_format_duration_refuses_what_it_cannot_write(duration: timedelta) -> None:
    with pytest.raises(ValueError, match="cannot format"):
        format_duration(duration)


@settings(database=None)
@given(seconds=st.integers(min_value=0, max_value=10**9))
def test_format_then_parse_gives_the_same_duration(seconds: int) -> None:
    duration = timedelta(seconds=seconds)

    assert parse_duration(format_duration(duration)) == duration


@pytest.mark.parametrize(
    ("seconds", "spoken"),
    [
        (0, "0 seconds"),
        (1, "1 second"),
        (45, "45 seconds"),
        (0.3, "0.3 seconds"),
        (60, "1 minute"),
        (30 * 60, "30 minutes"),
        (3600, "1 hour"),
        (65 * 60, "65 minutes"),
        (90 * 60, "90 minutes"),
        (2 * 3600, "2 hours"),
        (150 * 60, "2 hours 30 minutes"),
        (86_400, "1 day"),
        (7 * 86_400, "7 days"),
        (36 * 3600, "1 day 12 hours"),
        (-55 * 60, "55 minutes"),
    ],
)
def test_spoken_duration_says_it_as_people_do(seconds: int, spoken: str) -> None:
    assert spoken_duration(seconds) == spoken
    assert not re.search(r"\b(h|min|d|s)\b", spoken)  # never "1 h 0 min"
