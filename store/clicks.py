"""Decision clicks recorded when they arrive, applied after: records, the protocol, the verbs.

A person's Approve click is written here at once (a cheap insert, only for a pending proposal
and once per person and verb), so it can be answered "recorded" however busy the service is;
an applier (bot/decisions.py) then leases the recorded clicks oldest first, applies each through
the usual decision path, and settles it. A click whose applier stopped (a restart, a crash) is
leased again when its lease ends, by any instance. Every backend implements :class:`ClickStore`
on its own database; get it from ``Store.clicks()``.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Literal, Protocol

from contracts.frozen import Frozen
from store.connector import Connector, Row
from store.rows import read_optional_time, read_time
from store.shield import finish_even_if_cancelled

__all__ = ["ClickStore", "ClickVerb", "Clicks", "RecordedClick"]

#: The clicks recorded before they are applied.
ClickVerb = Literal["approve"]


class RecordedClick(Frozen):
    """One person's decision click, recorded and not yet settled."""

    id: int  #: increasing in the order clicks were recorded
    proposal_id: str
    actor: str  #: the Slack user who clicked
    verb: ClickVerb
    channel: str | None  #: where the click was (where the clicker is answered)
    recorded_at: datetime
    leased_until: datetime | None = None  #: an applier holds it until then


class ClickStore(Protocol):
    async def record_click(
        self,
        proposal_id: str,
        *,
        actor: str,
        verb: ClickVerb,
        channel: str | None,
        now: datetime,
    ) -> tuple[RecordedClick, bool] | None:
        """Record ``actor``'s click on the proposal if it is pending: the record and True, or
        the record of the same person's earlier click of ``verb`` and False; None when the
        proposal is not pending (or does not exist). Raises StoreUnavailable when the store
        cannot record it."""
        ...

    async def claim_clicks(
        self, *, now: datetime, limit: int, lease: timedelta
    ) -> list[RecordedClick]:
        """Lease up to ``limit`` recorded clicks nobody holds, oldest first, until
        ``now + lease``."""
        ...

    async def settle_click(self, click_id: int) -> None:
        """The click was applied, or refused and its clicker told: remove it."""
        ...

    async def waiting_clicks(self) -> int:
        """How many clicks are recorded and not yet settled."""
        ...

    async def is_waiting(self, click_id: int) -> bool:
        """Whether the click is recorded and not yet settled (by any applier)."""
        ...


def click_from_row(row: Row) -> RecordedClick:
    """The one place a stored row becomes a RecordedClick."""
    return RecordedClick(
        id=int(row["id"]),
        proposal_id=row["proposal_id"],
        actor=row["actor"],
        verb=row["verb"],
        channel=row["channel"],
        recorded_at=read_time(row["recorded_at"]),
        leased_until=read_optional_time(row["leased_until"]),
    )


class Clicks:
    """The ClickStore, written once over a backend's connector (store/connector.py). Get it
    from ``Store.clicks()``."""

    def __init__(self, backend: Connector) -> None:
        self._backend = backend

    @finish_even_if_cancelled
    async def record_click(
        self,
        proposal_id: str,
        *,
        actor: str,
        verb: ClickVerb,
        channel: str | None,
        now: datetime,
    ) -> tuple[RecordedClick, bool] | None:
        async with self._backend.tx(write=True) as tx:
            row = await tx.one(
                "record_click",
                proposal_id=proposal_id,
                actor=actor,
                verb=verb,
                channel=channel,
                now=now,
            )
            if row is not None:
                return click_from_row(row), True
            earlier = await tx.one(
                "select_recorded_click", proposal_id=proposal_id, actor=actor, verb=verb
            )
            return None if earlier is None else (click_from_row(earlier), False)

    @finish_even_if_cancelled
    async def claim_clicks(
        self, *, now: datetime, limit: int, lease: timedelta
    ) -> list[RecordedClick]:
        if limit < 1:  # SQLite reads a negative LIMIT as "no limit"
            raise ValueError(f"limit: got {limit}; expected a positive number of clicks")
        async with self._backend.tx(write=True) as tx:
            rows = await tx.all("claim_clicks", now=now, lease=now + lease, limit=limit)
            return sorted((click_from_row(row) for row in rows), key=lambda c: c.id)

    @finish_even_if_cancelled
    async def settle_click(self, click_id: int) -> None:
        async with self._backend.tx(write=True) as tx:
            await tx.execute("settle_click", id=click_id)

    @finish_even_if_cancelled
    async def waiting_clicks(self) -> int:
        async with self._backend.tx(write=False) as tx:
            row = await tx.one("count_recorded_clicks")
            assert row is not None  # count(*) returns one row
            return int(row["waiting"])

    @finish_even_if_cancelled
    async def is_waiting(self, click_id: int) -> bool:
        async with self._backend.tx(write=False) as tx:
            return await tx.one("select_click", id=click_id) is not None
