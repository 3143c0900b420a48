"""Where a PostgreSQL record becomes a Proposal or an AuditEntry, and a value becomes a parameter.

Datetimes are timestamptz (asyncpg reads them back as UTC datetimes); JSON values are ``json``
columns passed and read as text, so what is read back is exactly what was written (see
``store/sql/postgres/0001_init.sql``); approver roles are a ``text[]``.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import asyncpg

from contracts.base import Preview
from contracts.outcomes import OUTCOMES
from store.base import AuditEntry, Delivery, NewProposal, Proposal
from store.lifecycle import Effect, Status
from store.rows import dump_json

__all__ = [
    "audit_entry_from_record",
    "aware",
    "delivery_from_record",
    "new_proposal_args",
    "proposal_from_record",
]


def aware(value: datetime, *, field: str = "datetime") -> datetime:
    """``value`` in UTC. Naive datetimes are refused: their instant is unknown."""
    if value.tzinfo is None or value.utcoffset() is None:
        raise ValueError(f"{field}: got naive datetime {value!r}; expected a timezone-aware one")
    return value.astimezone(UTC)


def _optional_aware(value: datetime | None, *, field: str) -> datetime | None:
    return None if value is None else aware(value, field=field)


def new_proposal_args(new: NewProposal) -> tuple[Any, ...]:
    """The positional parameters of the proposal INSERT, in its column order."""
    created_at = aware(new.created_at, field="created_at")
    return (
        new.id,
        new.agent,
        new.submission_key,
        new.submission_fingerprint,
        new.requested_by,
        new.run_id,
        new.operation,
        dump_json(new.request),
        dump_json(new.arguments),
        new.preview.model_dump_json(),
        new.binding_hash,
        new.agent_reason,
        new.callback_url,
        new.rule_id,
        new.decision,
        new.policy_note,
        list(new.approver_roles),
        new.channel,
        new.status.value,
        created_at,
        _optional_aware(new.expires_at, field="expires_at"),
        created_at,  # updated_at
        _optional_aware(new.lease_until, field="lease_until"),
        new.risk,
        new.quorum,
        new.supersedes,
        new.edited_by,
        _optional_aware(new.remind_at, field="remind_at"),
        new.standing_rule_id,
        new.review_sampled,
        new.delegation_id,
    )


def _utc(value: datetime | None) -> datetime | None:
    return None if value is None else value.astimezone(UTC)


def proposal_from_record(row: asyncpg.Record) -> Proposal:
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
        approver_roles=tuple(row["approver_roles"]),
        channel=row["channel"],
        status=Status(row["status"]),
        created_at=row["created_at"].astimezone(UTC),
        expires_at=_utc(row["expires_at"]),
        slack_channel=row["slack_channel"],
        slack_ts=row["slack_ts"],
        decided_by=row["decided_by"],
        decided_at=_utc(row["decided_at"]),
        decision_note=row["decision_note"],
        outcome=None if outcome is None else OUTCOMES.validate_json(outcome),
        updated_at=row["updated_at"].astimezone(UTC),
        lease_until=_utc(row["lease_until"]),
        risk=row["risk"],
        quorum=row["quorum"],
        supersedes=row["supersedes"],
        edited_by=row["edited_by"],
        superseded_by=row["superseded_by"],
        remind_at=_utc(row["remind_at"]),
        reminded_at=_utc(row["reminded_at"]),
        extended_by=row["extended_by"],
        extended_at=_utc(row["extended_at"]),
        standing_rule_id=row["standing_rule_id"],
        review_sampled=row["review_sampled"],
        delegation_id=row["delegation_id"],
        digest_id=row["digest_id"],
    )


def delivery_from_record(row: asyncpg.Record) -> Delivery:
    return Delivery(
        id=row["id"],
        proposal_id=row["proposal_id"],
        effect=Effect(row["effect"]),
        status=Status(row["status"]),
        attempts=row["attempts"],
        created_at=row["created_at"].astimezone(UTC),
    )


def audit_entry_from_record(row: asyncpg.Record) -> AuditEntry:
    return AuditEntry(
        seq=row["seq"],
        at=row["at"].astimezone(UTC),
        proposal_id=row["proposal_id"],
        actor=row["actor"],
        event=row["event"],
        detail=json.loads(row["detail"]),
        prev_hash=row["prev_hash"],
        hash=row["hash"],
    )
