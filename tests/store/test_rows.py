"""Stored values (store/rows.py): JSON text written and read back as the standard library writes
and reads it, whichever encoder or decoder does the work; times as SQLite stores them."""

from __future__ import annotations

import json
import math
from datetime import UTC, datetime, timedelta, timezone, tzinfo
from typing import Any

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from store.rows import db_time, dump_json, load_json

_STANDARD = json.JSONEncoder(ensure_ascii=False, allow_nan=False, separators=(",", ":")).encode

JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.floats(min_value=-1e-4, max_value=1e-4, allow_subnormal=True)  # spelled apart by orjson
    | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=12,
)


@given(JSON_VALUES)
@example({"ratio": 1e-05, "eps": [2.5e-07, -1e-7, 0.0001, 1e-10, 5e-324], "x": 1e16})
@example([1e-05, None])
def test_what_is_written_reads_back_as_the_standard_librarys_text_does(value: Any) -> None:
    text = dump_json(value)
    assert text == _STANDARD(value)  # the same text: SQLite compares nested values by it
    assert load_json(text) == json.loads(_STANDARD(value))
    assert json.loads(text) == json.loads(_STANDARD(value))


@pytest.mark.parametrize(
    "text",
    [
        "[18446744073709551616]",  # past 64 bits: orjson would read a float
        "[-9223372036854775809]",
        '{"n": 123456789012345678901234567890}',
        "[1e400]",  # infinity as the standard decoder reads it
        '["\\ud800"]',  # a lone surrogate
        '{"a": 1, "a": 2}',
    ],
)
def test_text_orjson_would_read_differently_is_read_as_the_standard_decoder_does(
    text: str,
) -> None:
    assert repr(load_json(text)) == repr(json.loads(text))


@pytest.mark.parametrize("value", [math.nan, {"x": [math.inf]}, -math.inf])
def test_nan_and_infinities_are_refused_as_before(value: Any) -> None:
    with pytest.raises(ValueError, match="not JSON compliant"):
        dump_json(value)


def test_an_integer_past_64_bits_and_a_key_that_is_not_text_are_written_as_before() -> None:
    assert dump_json({"n": 2**70, 1: None}) == _STANDARD({"n": 2**70, 1: None})


def test_a_time_is_stored_as_its_instant_in_utc_whatever_its_zone_and_however_often() -> None:
    instant = datetime(2026, 12, 4, 12, 30, 1, 250, tzinfo=UTC)
    for _ in range(2):  # the second time from the times stored lately
        for zone in (UTC, timezone(timedelta(hours=5, minutes=30)), timezone(-timedelta(hours=8))):
            assert db_time(instant.astimezone(zone)) == "2026-12-04T12:30:01.000250Z"
    later = [db_time(instant + timedelta(seconds=n)) for n in range(200)]
    assert later[-1] == "2026-12-04T12:33:20.000250Z"
    assert len(set(later)) == 200


def test_a_naive_time_is_refused_even_when_its_wall_clock_was_stored_lately() -> None:
    instant = datetime(2026, 12, 4, 12, 30, tzinfo=UTC)
    db_time(instant)
    with pytest.raises(ValueError, match="naive datetime"):
        db_time(instant.replace(tzinfo=None), field="now")


class _ClocksGoBack(tzinfo):
    """A zone whose clocks go back an hour, as New York's on 2026-11-01: from 01:00 to 02:00
    the wall clock shows each time twice, first at UTC-4 (fold 0), then at UTC-5 (fold 1)."""

    def utcoffset(self, dt: datetime | None) -> timedelta:
        return timedelta(hours=-5 if dt is not None and dt.fold else -4)

    def dst(self, dt: datetime | None) -> timedelta | None:
        return None

    def tzname(self, dt: datetime | None) -> str:
        return "EST" if dt is not None and dt.fold else "EDT"


def test_the_two_instants_a_clock_set_back_shows_alike_are_stored_apart() -> None:
    zone = _ClocksGoBack()
    first = datetime(2026, 11, 1, 1, 30, tzinfo=zone)
    second = first.replace(fold=1)  # an hour later, the same wall clock in the same zone
    assert first == second  # Python compares times of one zone by their wall clock
    for _ in range(2):  # the second time from the times stored lately
        assert db_time(first) == "2026-11-01T05:30:00.000000Z"
        assert db_time(second) == "2026-11-01T06:30:00.000000Z"
