"""A value from the configuration file quoted in a problem as TOML writes it, never as Python
does: true rather than True, { key = ... } rather than {'key': ...}."""

from __future__ import annotations

import tomllib
from datetime import UTC, date, datetime, time

import pytest

from contracts.toml_text import as_toml


@pytest.mark.parametrize(
    ("value", "written"),
    [
        (True, "true"),
        (False, "false"),
        (25, "25"),
        (0.3, "0.3"),
        (float("inf"), "inf"),
        (float("-inf"), "-inf"),
        ("30m", "'30m'"),
        ("it's", '"it\'s"'),
        ("C:\\path", "'C:\\path'"),
        ("two\nlines", '"two\\nlines"'),
        ([1, "a", True], "[1, 'a', true]"),
        ({"after": "50%", "approvers": ["leads"]}, "{ after = '50%', approvers = ['leads'] }"),
        ({"payments.refund": 1}, "{ 'payments.refund' = 1 }"),
        ({}, "{}"),
        (date(2026, 1, 2), "2026-01-02"),
        (time(9, 30), "09:30:00"),
        (datetime(2026, 1, 2, 9, 30, tzinfo=UTC), "2026-01-02T09:30:00+00:00"),
    ],
)
def test_a_value_is_written_as_toml_writes_it(value: object, written: str) -> None:
    assert as_toml(value) == written


@pytest.mark.parametrize(
    "value",
    [True, 25, -0.5, "30m", "it's", "C:\\path", "tab\there", [1, ["a", False]], {"a": {"b": 1}}],
)
def test_what_is_written_reads_back_as_the_same_value(value: object) -> None:
    assert tomllib.loads(f"key = {as_toml(value)}")["key"] == value


def test_nan_is_written_as_toml_writes_it() -> None:
    assert as_toml(float("nan")) == "nan"


def test_a_long_value_is_shortened() -> None:
    assert as_toml("x" * 100) == "'" + "x" * 57 + "...'"
    assert as_toml(list(range(8))) == "[0, 1, 2, 3, 4, ...]"
    assert as_toml([{"after": "50%", "approvers": ["leads"]}]) == (
        "[{ after = '50%', approvers = [...] }]"
    )
    assert as_toml({str(n): n for n in range(7)}) == ("{ 0 = 0, 1 = 1, 2 = 2, 3 = 3, 4 = 4, ... }")
