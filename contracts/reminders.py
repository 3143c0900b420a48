"""Reminders before expiry, and the one extension an approver may grant.

``remind_at`` is a share of a proposal's lifetime, written as a percentage: ``"80%"`` reminds the
approvers once four fifths of the time between the proposal's creation and its expiry have
passed. ``"off"`` sends no reminder. The ``[approvals]`` section sets the default, and an ask
rule may override it.

``extend_by`` (on an ask rule) is how much one Extend click adds to a pending proposal's expiry.
A proposal is extended at most once, so it lives at most ``expires_after + extend_by``, which the
policy keeps within :data:`contracts.policy.MAX_EXPIRY`.
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta
from typing import Final, Literal

from contracts.toml_text import as_toml

__all__ = [
    "DEFAULT_REMIND_AT",
    "OFF",
    "RemindAt",
    "format_remind_at",
    "parse_remind_at",
    "remind_time",
]

#: The ``remind_at`` that sends no reminder.
OFF: Final = "off"

#: A share of the lifetime strictly between 0 and 1, or :data:`OFF`.
RemindAt = float | Literal["off"]

#: Without configuration: remind when 80% of the lifetime has passed.
DEFAULT_REMIND_AT: Final[RemindAt] = 0.8

_PERCENT = re.compile(r"[0-9]{1,2}(?:\.[0-9]{1,2})?%")
_MICROSECOND: Final = timedelta(microseconds=1)
_EXPECTED = (
    "expected a percentage of the proposal's lifetime between 1% and 99%, such as '80%', "
    "or 'off' for no reminder"
)


def parse_remind_at(value: object) -> RemindAt:
    """The share ``value`` names (``"80%"`` -> 0.8), or OFF; raise ValueError quoting it."""
    if value == OFF:
        return OFF
    if not isinstance(value, str):
        raise ValueError(f"{_EXPECTED}, got {as_toml(value)}")
    if _PERCENT.fullmatch(value) is None or not 1 <= float(value[:-1]) < 100:
        raise ValueError(f"{_EXPECTED}, got {as_toml(value)}")
    return float(value[:-1]) / 100


def format_remind_at(value: RemindAt) -> str:
    """The configuration text of ``value`` (0.8 -> ``"80%"``)."""
    if value == OFF:
        return OFF
    return f"{round(float(value) * 100, 2):g}%"


def remind_time(
    remind_at: RemindAt, *, created_at: datetime, expires_at: datetime | None
) -> datetime | None:
    """When the reminder of a proposal created at ``created_at`` is due; None for none."""
    if remind_at == OFF or expires_at is None or expires_at <= created_at:
        return None
    lifetime = (expires_at - created_at) / _MICROSECOND
    return created_at + round(lifetime * remind_at) * _MICROSECOND
