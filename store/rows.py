"""Where a stored row becomes a Proposal or a Delivery, whichever backend read it,
and where a value is read back or checked on its way in.

SQLite stores times as UTC text in one fixed-width format (``2024-05-01T12:00:00.000000Z``), so
that comparing the text in SQL compares the instants; PostgreSQL stores ``timestamptz``, read
back as datetimes. JSON values are text in both. A list of text (``approver_roles``) is JSON
text on SQLite and ``text[]`` on PostgreSQL. The readers below take either form.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from enum import Enum
from functools import cache
from types import NoneType, UnionType
from typing import Any, TypeVar, Union, get_args, get_origin

import orjson
from pydantic import BaseModel

from store.base import StoreError
from store.connector import Row, Tx

M = TypeVar("M", bound=BaseModel)

__all__ = [
    "aware",
    "check_limit",
    "db_time",
    "dump_json",
    "from_db_time",
    "load_json",
    "model_from_row",
    "read_array",
    "read_columns",
    "read_optional_time",
    "read_time",
    "required",
]


def aware(value: datetime, *, field: str = "datetime") -> datetime:
    """``value`` in UTC. Naive datetimes are refused: their instant is unknown."""
    if value.tzinfo is None or value.utcoffset() is None:
        raise ValueError(f"{field}: got naive datetime {value!r}; expected a timezone-aware one")
    return value.astimezone(UTC)


def check_limit(limit: int, what: str) -> None:
    """A verb's ``limit``, checked: a positive number of ``what``. (SQLite reads a negative LIMIT
    as "no limit".)"""
    if limit < 1:
        raise ValueError(f"limit: got {limit}; expected a positive number of {what}")


async def required(tx: Tx, missing: StoreError, query: str, /, **params: Any) -> Row:
    """The row the named ``query`` reads in ``tx``, or ``missing`` raised when there is none."""
    row = await tx.one(query, **params)
    if row is None:
        raise missing
    return row


#: the text of times in UTC stored lately: a change stores its one ``now`` (the clock's, in
#: UTC) several times (the row's times, each audit entry's, the outbox's), and writing it costs
#: a conversion and an isoformat. Only times whose zone is UTC are kept: two of them are equal
#: exactly when their instants are. Times of one other zone are compared by their wall clock,
#: so the two instants a clock set back shows alike (fold 0 and 1) would be taken for one.
_STORED_TIMES: dict[datetime, str] = {}
_STORED_TIMES_KEPT = 64


def db_time(value: datetime, *, field: str = "datetime") -> str:
    """``value`` as SQLite stores it. Naive datetimes are refused: their instant is unknown."""
    if value.tzinfo is not UTC:
        return _utc_text(value, field)
    text = _STORED_TIMES.get(value)
    if text is None:
        text = _utc_text(value, field)
        if len(_STORED_TIMES) >= _STORED_TIMES_KEPT:
            _STORED_TIMES.clear()
        _STORED_TIMES[value] = text
    return text


def _utc_text(value: datetime, field: str) -> str:
    return aware(value, field=field).replace(tzinfo=None).isoformat(timespec="microseconds") + "Z"


def from_db_time(text: str) -> datetime:
    return datetime.fromisoformat(text).astimezone(UTC)


def read_time(value: str | datetime) -> datetime:
    """A stored time, read back in UTC: SQLite's text or PostgreSQL's timestamptz."""
    if isinstance(value, datetime):
        return value.astimezone(UTC)
    return from_db_time(value)


def read_optional_time(value: str | datetime | None) -> datetime | None:
    return None if value is None else read_time(value)


def read_array(value: str | Sequence[str]) -> tuple[str, ...]:
    """A stored list of text: SQLite's JSON text or PostgreSQL's text[]."""
    return tuple(load_json(value) if isinstance(value, str) else value)


#: nineteen digits in a row: perhaps an integer past 64 bits, which orjson reads as a float
_LONG_NUMBER = re.compile(r"[0-9]{19}")


def load_json(text: str) -> Any:
    """Stored JSON text as ``json.loads`` reads it. orjson reads it, in a fifth of the standard
    decoder's CPU (a proposal's row holds four such values), unless the text may hold an integer
    past 64 bits (orjson would make it a float) or orjson refuses it (a number too large for a
    float, a lone surrogate): the standard decoder reads those as it always did."""
    if _LONG_NUMBER.search(text) is None:
        try:
            return orjson.loads(text)
        except orjson.JSONDecodeError:
            pass
    return json.loads(text)


def _reader(annotation: Any) -> Callable[[Any], Any] | None:
    """How a stored value is read back for a field of this type (None: as the driver gives it)."""
    if annotation is datetime:
        return read_time
    if get_origin(annotation) in (Union, UnionType) and set(get_args(annotation)) == {
        datetime,
        NoneType,
    }:
        return read_optional_time
    if get_origin(annotation) is tuple and get_args(annotation) == (str, Ellipsis):
        return read_array
    if annotation is bool:  # SQLite's 0 and 1
        return bool
    if isinstance(annotation, type) and issubclass(annotation, Enum):
        return annotation
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):  # JSON text
        return annotation.model_validate_json
    return None


@cache
def _columns(
    model: type[BaseModel], given: tuple[str, ...]
) -> tuple[tuple[str, ...], tuple[tuple[str, Callable[[Any], Any]], ...]]:
    """The fields of ``model`` read from their column (those not ``given``): those taken as the
    driver returns them, and those read back by a reader of their type."""
    fields = [(name, _reader(field.annotation)) for name, field in model.model_fields.items()]
    plain = tuple(name for name, read in fields if read is None and name not in given)
    read = tuple((name, r) for name, r in fields if r is not None and name not in given)
    return plain, read


def model_from_row(model: type[M], row: Row, /, **given: Any) -> M:
    """``model`` from a stored row: each field not ``given`` is the column of its name, read
    back by its type (times, optional times, lists of text, booleans and enumerations as the
    readers here take them, a record from its JSON text; anything else as the driver returns
    it). A family's ``from_row`` gives what needs more (other JSON, computed values)."""
    values = read_columns(model, row, tuple(given))
    values.update(given)
    # the same validation as model(**values), without unpacking some fifty keyword arguments
    # into the call and packing them again (a fifth of a proposal row's reading)
    return model.model_validate(values)


def read_columns(model: type[BaseModel], row: Row, skip: tuple[str, ...] = (), /) -> dict[str, Any]:
    """The fields of ``model`` but ``skip`` as ``model_from_row`` reads them from ``row``'s
    columns, each read back by its type: the values its strict validation keeps as they are."""
    plain, read = _columns(model, skip)
    values = {name: row[name] for name in plain}
    for name, reader in read:
        values[name] = reader(row[name])
    return values


#: the encoder of stored JSON, made once (json.dumps with options makes one at every call)
_ENCODE = json.JSONEncoder(ensure_ascii=False, allow_nan=False, separators=(",", ":")).encode
#: what the standard encoder refuses, orjson is told to refuse too (it would write a time or a
#: dataclass as JSON)
_ORJSON_OPTIONS = orjson.OPT_PASSTHROUGH_DATETIME | orjson.OPT_PASSTHROUGH_DATACLASS
#: where orjson may have spelled a float otherwise than the standard encoder: those of magnitude
#: below 1e-4 (0.00001 for 1e-05, 2.5e-7 for 2.5e-07). Text holding it anywhere (in a string
#: too: that only costs the standard encoder's time) is written again.
_FLOAT_SPELLED_APART = re.compile(rb"0\.0000|e-[1-9](?![0-9])")


def dump_json(value: Any) -> str:
    """``value`` as stored JSON text: UTF-8, no spaces, NaN and infinities refused; exactly the
    text the standard encoder writes.

    orjson writes it, in a tenth of the standard encoder's CPU (some seven values a proposal).
    It writes NaN and infinities as ``null``, so text with a ``null`` is written again by the
    standard encoder, which refuses them; so is anything orjson refuses (an integer past 64
    bits, a key that is not text), which the standard encoder writes or refuses as before, and
    text where orjson may have spelled a small float its own way. The text must be the same
    whatever writes it: SQLite compares a stored list or object by its text (the standing
    rules' bound arguments), and text written before orjson was used is compared too."""
    try:
        text = orjson.dumps(value, option=_ORJSON_OPTIONS)
    except orjson.JSONEncodeError:
        return _ENCODE(value)
    if b"null" in text or _FLOAT_SPELLED_APART.search(text) is not None:
        return _ENCODE(value)
    return text.decode()
