"""The ``[delegation]`` section: how long a delegation from Slack lasts, and how often a
delegation token nobody has seen may be looked up.

A person runs ``/countersign delegate <agent> [for 8h]`` to let an agent act for them; without a
duration it lasts ``default``, and nobody can ask for more than ``max``. Both are durations as
people write them (contracts/durations.py). The database refuses anything past
:data:`MAX_DELEGATION` whatever the file says.

``unknown_tokens_per_second`` and ``unknown_tokens_burst`` bound the store lookups of delegation
tokens this instance has not seen before, whoever sends them (bot/delegations/lookups.py).
"""

from __future__ import annotations

from datetime import timedelta
from typing import Final

from pydantic import Field, field_validator, model_validator

from bot.settings.section import Section
from contracts.durations import format_duration, parse_duration

__all__ = ["MAX_DELEGATION", "DelegationSettings"]

#: The longest any delegation may last (store/sql/*/..._delegations.sql say the same).
MAX_DELEGATION: Final = timedelta(days=7)


class DelegationSettings(Section):
    #: how long a delegation lasts when the person names no duration
    default: timedelta = timedelta(hours=1)
    #: the longest a person may ask for (``for 8h``); at most 7 days
    max: timedelta = timedelta(hours=24)
    #: lookups in the store of delegation tokens not seen on this instance before, per second,
    #: from all callers together (a token bucket); past it 429, nothing looked up
    unknown_tokens_per_second: float = Field(default=2.0, gt=0, le=10_000, allow_inf_nan=False)
    #: that bucket's size
    unknown_tokens_burst: int = Field(default=20, ge=1, le=100_000)

    @field_validator("default", "max", mode="before")
    @classmethod
    def _duration(cls, value: object) -> timedelta:
        if isinstance(value, timedelta):
            return value
        duration = parse_duration(value)  # type: ignore[arg-type]  # it names what it expects
        if duration <= timedelta(0):
            raise ValueError(f"expected a duration above zero, such as '1h' (got {value!r})")
        if duration > MAX_DELEGATION:
            raise ValueError(
                f"expected at most {format_duration(MAX_DELEGATION)} (got {value!r}): a "
                "delegation is a short-lived permission; name people in an agent's acts_for "
                "for a lasting one"
            )
        return duration

    @model_validator(mode="after")
    def _default_within_max(self) -> DelegationSettings:
        if self.default > self.max:
            raise ValueError(
                f"default ({format_duration(self.default)}) is longer than max "
                f"({format_duration(self.max)})"
            )
        return self
