"""Where a stored row becomes a Proposal or a Delivery, whichever backend read it,
and where a value is read back or checked on its way in.

SQLite stores times as UTC text in one fixed-width format (``2024-05-01T12:00:00.000000Z``), so
that comparing the text in SQL compares the instants; PostgreSQL stores ``timestamptz``, read
back as datetimes. JSON values are text in both. A list of text (``approver_roles``) is JSON
text on SQLite and ``text[]`` on PostgreSQL. The readers below take either form.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from enum import Enum
from functools import cache
from types import NoneType, UnionType
from typing import Any, TypeVar, Union, get_args, get_origin

from pydantic import BaseModel, JsonValue

from contracts.outcomes import OUTCOMES, Outcome
from store.base import Approval, Delivery, NewProposal, Proposal, StoreError
from store.connector import Array, Row, Tx

M = TypeVar("M", bound=BaseModel)

__all__ = [
    "approval_from_row",
    "aware",
    "check_limit",
    "db_time",
    "delivery_from_row",
    "dump_json",
    "from_db_time",
    "insert_proposal_params",
    "model_from_row",
    "outcome_json",
    "proposal_from_row",
    "read_array",
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


def db_time(value: datetime, *, field: str = "datetime") -> str:
    """``value`` as SQLite stores it. Naive datetimes are refused: their instant is unknown."""
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
    return tuple(json.loads(value) if isinstance(value, str) else value)


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
def _columns(model: type[BaseModel]) -> tuple[tuple[str, Callable[[Any], Any] | None], ...]:
    return tuple((name, _reader(field.annotation)) for name, field in model.model_fields.items())


def model_from_row(model: type[M], row: Row, /, **given: Any) -> M:
    """``model`` from a stored row: each field not ``given`` is the column of its name, read
    back by its type (times, optional times, lists of text, booleans and enumerations as the
    readers here take them, a record from its JSON text; anything else as the driver returns
    it). A family's ``from_row`` gives what needs more (other JSON, computed values)."""
    values = {
        name: row[name] if read is None else read(row[name])
        for name, read in _columns(model)
        if name not in given
    }
    return model(**values, **given)


#: the encoder of stored JSON, made once (json.dumps with options makes one at every call)
_ENCODE = json.JSONEncoder(ensure_ascii=False, allow_nan=False, separators=(",", ":")).encode


def dump_json(value: Any) -> str:
    return _ENCODE(value)


def outcome_json(outcome: Outcome) -> dict[str, JsonValue]:
    dumped: dict[str, JsonValue] = OUTCOMES.dump_python(outcome, mode="json")
    return dumped


def insert_proposal_params(new: NewProposal) -> dict[str, Any]:
    """The named parameters of the query ``insert_proposal`` (times and the roles as Python
    values: each backend's Tx stores them its way)."""
    return {
        "id": new.id,
        "agent": new.agent,
        "submission_key": new.submission_key,
        "submission_fingerprint": new.submission_fingerprint,
        "requested_by": new.requested_by,
        "run_id": new.run_id,
        "operation": new.operation,
        "request": dump_json(new.request),
        "arguments": dump_json(new.arguments),
        "preview": new.preview.model_dump_json(),
        "binding_hash": new.binding_hash,
        "agent_reason": new.agent_reason,
        "callback_url": new.callback_url,
        "rule_id": new.rule_id,
        "decision": new.decision,
        "policy_note": new.policy_note,
        "approver_roles": Array(new.approver_roles),
        "channel": new.channel,
        "status": new.status.value,
        "created_at": new.created_at,
        "expires_at": new.expires_at,
        "lease_until": new.lease_until,
        "risk": new.risk,
        "quorum": new.quorum,
        "supersedes": new.supersedes,
        "edited_by": new.edited_by,
        "remind_at": new.remind_at,
        "standing_rule_id": new.standing_rule_id,
        "review_sampled": new.review_sampled,
        "delegation_id": new.delegation_id,
        "shown_after": new.shown_after,
        "urgent": new.urgent,
        "backup_roles": Array(new.backup_roles),
        "backup_at": new.backup_at,
        "batch_id": None,  #: the batch it joins, which the store decides (store/batches.py)
    }


def proposal_from_row(row: Row) -> Proposal:
    """The one place a stored proposal row becomes a Proposal (without its approvals)."""
    outcome = row["outcome"]
    return model_from_row(
        Proposal,
        row,
        request=json.loads(row["request"]),
        arguments=json.loads(row["arguments"]),
        outcome=None if outcome is None else OUTCOMES.validate_json(outcome),
        approvals=(),  # read apart (store/approvals.py)
        batch=None,  # creation only: stored as batch_id
    )


def approval_from_row(row: Row) -> Approval:
    return model_from_row(Approval, row)


def delivery_from_row(row: Row) -> Delivery:
    return model_from_row(Delivery, row)
