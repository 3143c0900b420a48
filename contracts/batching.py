"""Batching windows and backup approvers: what an ``ask`` rule may say about *when* people see
its proposals and *who else* may decide when nobody answers.

``batch = { window = "30m", max = 25 }`` lets the rule's proposals wait up to ``window`` to be
shown together: Countersign holds them and posts one digest per channel, rule and approver set
when the window closes or ``max`` proposals are held. The expiry clock starts when a proposal is
shown (:func:`shown_by`), so people always have the rule's whole ``expires_after`` to decide;
the agent waits at most ``window + expires_after``.

``then = { after = "50%", approvers = ["finance-leads"] }`` names backup roles: when nobody has
decided ``after`` a share of the time between showing and expiry (``"50%"``) or a duration after
showing (``"20m"``), the proposal is also offered to people holding one of ``approvers``
(:func:`handover_time`).

This module reads both tables (:func:`read_batch`, :func:`read_then`) into frozen models and
computes those times. Pure functions; no I/O.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping, Sequence
from datetime import datetime, timedelta
from difflib import get_close_matches
from typing import Final

from pydantic import Field

from contracts.durations import format_duration, parse_duration
from contracts.frozen import Frozen
from contracts.toml_text import as_toml

__all__ = [
    "BATCH_KEYS",
    "DEFAULT_BATCH_MAX",
    "MAX_BATCH",
    "MAX_WINDOW",
    "THEN_KEYS",
    "BackupRoute",
    "BatchPolicy",
    "format_after",
    "handover_time",
    "read_batch",
    "read_then",
    "shown_by",
]

#: How many proposals one batch holds when the rule does not say (``max``).
DEFAULT_BATCH_MAX: Final = 25
#: The most one batch may hold: a digest message lists at most this many items (its rows and
#: buttons stay within Block Kit's 50 blocks).
MAX_BATCH: Final = 50
#: The longest a proposal may wait to be shown, whatever a rule says.
MAX_WINDOW: Final = timedelta(days=1)
BATCH_KEYS: Final = ("window", "max")
THEN_KEYS: Final = ("after", "approvers")
_BATCH_EXAMPLE: Final = '{ window = "30m", max = 25 }'
_THEN_EXAMPLE: Final = '{ after = "50%", approvers = ["finance-leads"] }'
_PERCENT: Final = re.compile(r"[0-9]{1,2}(?:\.[0-9]{1,2})?%")
_MICROSECOND: Final = timedelta(microseconds=1)


class BatchPolicy(Frozen):
    """How long a rule's proposals may wait to be shown together, and how many at most."""

    window: timedelta = Field(gt=timedelta(0), le=MAX_WINDOW)
    max: int = Field(default=DEFAULT_BATCH_MAX, ge=1, le=MAX_BATCH)


class BackupRoute(Frozen):
    """Who else may decide, and from when, when nobody has decided a rule's proposal."""

    #: a share of the time between showing and expiry (0 < share < 1), or a duration after
    #: showing
    after: float | timedelta
    approvers: tuple[str, ...] = Field(min_length=1)  #: backup role names


def shown_by(batch: BatchPolicy | None, *, created_at: datetime) -> datetime:
    """The latest a proposal created at ``created_at`` is shown: at once without a batch, else
    when a window opened now would close (a proposal joining an open batch is shown when that
    batch closes, which is sooner)."""
    return created_at if batch is None else created_at + batch.window


def handover_time(route: BackupRoute, *, shown_at: datetime, expires_at: datetime) -> datetime:
    """When the proposal is also offered to ``route``'s approvers."""
    if isinstance(route.after, timedelta):
        return min(shown_at + route.after, expires_at)
    lifetime = max(expires_at - shown_at, timedelta(0)) / _MICROSECOND
    return shown_at + round(lifetime * route.after) * _MICROSECOND


def format_after(after: float | timedelta) -> str:
    """The configuration text of ``after`` (0.5 -> ``"50%"``, 20 minutes -> ``"20m"``)."""
    if isinstance(after, timedelta):
        return format_duration(after)
    return f"{round(after * 100, 2):g}%"


def read_batch(
    raw: object, *, expires_after: timedelta | None
) -> tuple[BatchPolicy | None, list[str]]:
    """The ``batch`` table of an ask rule, and every problem with it (each naming its key).

    ``expires_after`` is the rule's (None when it was itself wrong, reported elsewhere): a
    window must be shorter than it, so that batching is for proposals that can wait.
    """
    if not isinstance(raw, Mapping):
        return None, [
            f"field 'batch': expected a table such as {_BATCH_EXAMPLE}, got {as_toml(raw)}"
        ]
    problems = _unknown_keys("batch", raw, BATCH_KEYS)
    window = _window(raw.get("window"), expires_after, problems)
    most = raw.get("max", DEFAULT_BATCH_MAX)
    if isinstance(most, bool) or not isinstance(most, int) or not 1 <= most <= MAX_BATCH:
        problems.append(
            f"field 'batch.max': expected a whole number from 1 to {MAX_BATCH} (the most "
            f"proposals shown in one digest), got {as_toml(most)}"
        )
    if problems or window is None:
        return None, problems
    return BatchPolicy(window=window, max=most), []


def read_then(
    raw: object,
    *,
    approvers: Collection[str],
    roles: Collection[str],
    expires_after: timedelta | None,
) -> tuple[BackupRoute | None, list[str]]:
    """The ``then`` table of an ask rule, and every problem with it (each naming its key).

    ``approvers`` are the rule's own roles (a backup role must be another one), ``roles`` the
    configured ones, ``expires_after`` the rule's (a duration must end before it).
    """
    if not isinstance(raw, Mapping):
        return None, [f"field 'then': expected a table such as {_THEN_EXAMPLE}, got {as_toml(raw)}"]
    problems = _unknown_keys("then", raw, THEN_KEYS)
    after = _after(raw.get("after"), expires_after, problems)
    backups = _backups(raw.get("approvers"), approvers, roles, problems)
    if problems or after is None:
        return None, problems
    return BackupRoute(after=after, approvers=backups), []


def _unknown_keys(table: str, raw: Mapping[object, object], known: Sequence[str]) -> list[str]:
    problems = []
    for key in raw:
        if key not in known:
            close = get_close_matches(str(key), known, n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            problems.append(
                f"field {table!r}: unknown key {key!r}{hint} (expected {', '.join(known)})"
            )
    return problems


def _window(
    value: object, expires_after: timedelta | None, problems: list[str]
) -> timedelta | None:
    if value is None:
        problems.append(
            "field 'batch.window' is missing (how long proposals may wait to be shown together, "
            f"such as '30m'; at most {format_duration(MAX_WINDOW)})"
        )
        return None
    try:
        window = parse_duration(value)  # type: ignore[arg-type]
    except ValueError as error:
        problems.append(f"field 'batch.window': {error}")
        return None
    if window <= timedelta(0) or window > MAX_WINDOW:
        problems.append(
            f"field 'batch.window' is {value!r}; it must be longer than zero and at most "
            f"{format_duration(MAX_WINDOW)}"
        )
        return None
    if expires_after is not None and window >= expires_after:
        problems.append(
            f"field 'batch.window' is {value!r}, but the rule's proposals expire after "
            f"{format_duration(expires_after)} (field 'expires_after'); a window must be shorter "
            "than the expiry"
        )
        return None
    return window


def _after(
    value: object, expires_after: timedelta | None, problems: list[str]
) -> float | timedelta | None:
    expected = (
        "expected a share of the time between showing and expiry from 1% to 99%, such as "
        "'50%', or a duration after showing, such as '20m'"
    )
    if value is None:
        problems.append(f"field 'then.after' is missing; {expected}")
        return None
    if not isinstance(value, str):
        problems.append(f"field 'then.after': {expected}, got {as_toml(value)}")
        return None
    if value.endswith("%"):
        if _PERCENT.fullmatch(value) is None or not 1 <= float(value[:-1]) < 100:
            problems.append(f"field 'then.after': {expected}, got {as_toml(value)}")
            return None
        return float(value[:-1]) / 100
    try:
        duration = parse_duration(value)
    except ValueError:
        problems.append(f"field 'then.after': {expected}, got {as_toml(value)}")
        return None
    if duration <= timedelta(0):
        problems.append(f"field 'then.after' is {value!r}; it must be longer than zero")
        return None
    if expires_after is not None and duration >= expires_after:
        problems.append(
            f"field 'then.after' is {value!r}, but the rule's proposals expire "
            f"{format_duration(expires_after)} after they are shown (field 'expires_after'); "
            "the backup approvers must be offered the proposal before it expires"
        )
        return None
    return duration


def _backups(
    value: object, approvers: Collection[str], roles: Collection[str], problems: list[str]
) -> tuple[str, ...]:
    if not isinstance(value, list | tuple) or not value:
        problems.append(
            "field 'then.approvers': expected a list of at least one role (who may also "
            f"decide once nobody has), got {as_toml(value)}"
        )
        return ()
    names: list[str] = []
    for item in value:
        if not isinstance(item, str) or item not in roles:
            listed = ", ".join(sorted(roles)) or "none"
            problems.append(
                f"field 'then.approvers': unknown role {as_toml(item)} (configured roles: {listed})"
            )
        elif item in approvers:
            problems.append(
                f"field 'then.approvers': role {item!r} already approves this rule (field "
                "'approvers'); name a backup role that does not"
            )
        elif item not in names:
            names.append(item)
    return tuple(names)
