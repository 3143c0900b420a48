"""Where a stored row becomes a Proposal or a Delivery, whichever backend read it,
and where a value is read back or checked on its way in.

SQLite stores times as UTC text in one fixed-width format (``2024-05-01T12:00:00.000000Z``), so
that comparing the text in SQL compares the instants; PostgreSQL stores ``timestamptz``, read
back as datetimes. JSON values are text in both. A list of text (``approver_roles``) is JSON
text on SQLite and ``text[]`` on PostgreSQL. The readers below take either form.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from pydantic import JsonValue

from contracts.base import Preview
from contracts.outcomes import OUTCOMES, Outcome
from store.base import Approval, Delivery, NewProposal, Proposal
from store.connector import Array, Row
from store.lifecycle import Effect, Status

__all__ = [
    "approval_from_row",
    "aware",
    "db_time",
    "delivery_from_row",
    "dump_json",
    "from_db_time",
    "insert_proposal_params",
    "outcome_json",
    "proposal_from_row",
    "read_array",
    "read_optional_time",
    "read_time",
]


def aware(value: datetime, *, field: str = "datetime") -> datetime:
    """``value`` in UTC. Naive datetimes are refused: their instant is unknown."""
    if value.tzinfo is None or value.utcoffset() is None:
        raise ValueError(f"{field}: got naive datetime {value!r}; expected a timezone-aware one")
    return value.astimezone(UTC)


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


def dump_json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, allow_nan=False, separators=(",", ":"))


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
    return Proposal(
        id=row["id"],
        agent=row["agent"],
        submission_key=row["submission_key"],
        submission_fingerprint=row["submission_fingerprint"],
        requested_by=row["requested_by"],
        run_id=row["run_id"],
        operation=row["operation"],
        request=json.loads(row["request"]),
        arguments=json.loads(row["arguments"]),
        preview=Preview.model_validate_json(row["preview"]),
        binding_hash=row["binding_hash"],
        agent_reason=row["agent_reason"],
        callback_url=row["callback_url"],
        rule_id=row["rule_id"],
        decision=row["decision"],
        policy_note=row["policy_note"],
        approver_roles=read_array(row["approver_roles"]),
        channel=row["channel"],
        status=Status(row["status"]),
        created_at=read_time(row["created_at"]),
        expires_at=read_optional_time(row["expires_at"]),
        slack_channel=row["slack_channel"],
        slack_ts=row["slack_ts"],
        decided_by=row["decided_by"],
        decided_at=read_optional_time(row["decided_at"]),
        decision_note=row["decision_note"],
        outcome=None if outcome is None else OUTCOMES.validate_json(outcome),
        updated_at=read_time(row["updated_at"]),
        lease_until=read_optional_time(row["lease_until"]),
        risk=row["risk"],
        quorum=row["quorum"],
        supersedes=row["supersedes"],
        edited_by=row["edited_by"],
        superseded_by=row["superseded_by"],
        remind_at=read_optional_time(row["remind_at"]),
        reminded_at=read_optional_time(row["reminded_at"]),
        extended_by=row["extended_by"],
        extended_at=read_optional_time(row["extended_at"]),
        standing_rule_id=row["standing_rule_id"],
        review_sampled=bool(row["review_sampled"]),
        delegation_id=row["delegation_id"],
        digest_id=row["digest_id"],
        shown_after=read_optional_time(row["shown_after"]),
        urgent=bool(row["urgent"]),
        backup_roles=read_array(row["backup_roles"]),
        backup_at=read_optional_time(row["backup_at"]),
        batch_id=row["batch_id"],
        handed_over_at=read_optional_time(row["handed_over_at"]),
    )


def approval_from_row(row: Row) -> Approval:
    return Approval(
        approver=row["approver"],
        binding_hash=row["binding_hash"],
        approved_at=read_time(row["approved_at"]),
    )


def delivery_from_row(row: Row) -> Delivery:
    return Delivery(
        id=row["id"],
        proposal_id=row["proposal_id"],
        effect=Effect(row["effect"]),
        status=Status(row["status"]),
        attempts=row["attempts"],
        created_at=read_time(row["created_at"]),
    )
