"""Decision clicks recorded when they arrive, applied after: the records and their store.

A person's decision click (Approve, a rejection's reason, Extend, Retry, a reconciliation, a
digest's decisions, an escalation's) is written here at once (a cheap insert, only while its
subject can still be decided, and once per person and verb), so it can be answered "recorded"
however busy the service is;
an applier (bot/flow/clicks.py) then leases the recorded clicks oldest first, applies each through
the usual decision path, and settles it. A click whose applier stopped (a restart, a crash) is
leased again when its lease ends, by any instance. :class:`ClickStore` is written once over a
backend's connector; get it from ``Store.clicks()``.
"""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from typing import Final, Literal, get_args

from pydantic import Field, JsonValue

from contracts.frozen import Frozen
from store.backend import FamilyStore
from store.connector import Row
from store.proposals.lifecycle import Status
from store.rows import check_limit, dump_json, read_optional_time, read_time
from store.shield import finish_even_if_cancelled

__all__ = [
    "DIGEST_VERBS",
    "ESCALATION_VERBS",
    "PROPOSAL_VERBS",
    "ClickStore",
    "ClickVerb",
    "Clicked",
    "RecordedClick",
]

#: The clicks recorded before they are applied (the CHECK of migration 0021 lists the same).
ClickVerb = Literal[
    "approve",
    "reject",
    "extend",
    "retry",
    "reconcile_succeeded",
    "reconcile_failed",
    "digest_approve_all",
    "digest_approve",
    "digest_reject",
    "digest_review",
    "escalation_take",
    "escalation_resolve",
    "escalation_hand_back",
]

#: The verbs whose subject is a proposal, and the status it must be in for the click to be
#: recorded; the others' subject is a digest (``digest_``) or an escalation (``escalation_``).
PROPOSAL_VERBS: Final[dict[ClickVerb, Status]] = {
    "approve": Status.PENDING,
    "reject": Status.PENDING,
    "extend": Status.PENDING,
    "retry": Status.NEEDS_RECONCILIATION,
    "reconcile_succeeded": Status.NEEDS_RECONCILIATION,
    "reconcile_failed": Status.NEEDS_RECONCILIATION,
}


#: The verbs whose subject is a digest, and those whose subject is an escalation.
DIGEST_VERBS: Final[tuple[ClickVerb, ...]] = tuple(
    v for v in get_args(ClickVerb) if v.startswith("digest_")
)
ESCALATION_VERBS: Final[tuple[ClickVerb, ...]] = tuple(
    v for v in get_args(ClickVerb) if v.startswith("escalation_")
)


class Clicked(Frozen):
    """One person's decision click, as it arrived."""

    subject: str  #: the proposal, digest or escalation clicked on (the verb says which)
    actor: str  #: the Slack user who clicked
    verb: ClickVerb
    channel: str | None  #: where the click was (where the clicker is answered)
    #: what the click carries besides: a reason, the items chosen, a note
    detail: dict[str, JsonValue] = Field(default_factory=dict)


class RecordedClick(Clicked):
    """One person's decision click, recorded and not yet settled."""

    id: int  #: increasing in the order clicks were recorded
    recorded_at: datetime
    leased_until: datetime | None = None  #: an applier holds it until then
    attempts: int = 0  #: times it was leased: past 1, an earlier applier may have applied it


def click_from_row(row: Row) -> RecordedClick:
    """The one place a stored row becomes a RecordedClick."""
    return RecordedClick(
        id=int(row["id"]),
        subject=row["subject"],
        actor=row["actor"],
        verb=row["verb"],
        channel=row["channel"],
        detail=json.loads(row["detail"]),
        recorded_at=read_time(row["recorded_at"]),
        leased_until=read_optional_time(row["leased_until"]),
        attempts=int(row["attempts"]),
    )


class ClickStore(FamilyStore):
    """Decision clicks recorded at the click and applied after; get it from ``Store.clicks()``."""

    @finish_even_if_cancelled
    async def record_click(
        self,
        subject: str,
        *,
        actor: str,
        verb: ClickVerb,
        channel: str | None,
        now: datetime,
        detail: dict[str, JsonValue] | None = None,
    ) -> tuple[RecordedClick, bool] | None:
        """Record ``actor``'s click on ``subject`` while it can be decided (a proposal in the
        status :data:`PROPOSAL_VERBS` names, a digest with an item pending, an escalation not
        resolved): the record and True, or the record of the same person's earlier click of
        ``verb`` and False; None when it cannot be decided (or does not exist). Raises
        StoreUnavailable when the store cannot record it."""
        clicked = {
            "subject": subject,
            "actor": actor,
            "verb": verb,
            "channel": channel,
            "detail": dump_json(detail or {}),
            "now": now,
        }
        async with self._backend.tx(write=True) as tx:
            # each kind of subject has its own query: what "can still be decided" means differs
            if verb in PROPOSAL_VERBS:
                row = await tx.one("record_click", status=PROPOSAL_VERBS[verb].value, **clicked)
            elif verb in DIGEST_VERBS:
                row = await tx.one("record_digest_click", **clicked)
            elif verb in ESCALATION_VERBS:
                row = await tx.one("record_escalation_click", **clicked)
            else:
                raise ValueError(
                    f"verb: got {verb!r}; expected one of {', '.join(get_args(ClickVerb))}"
                )
            if row is not None:
                return click_from_row(row), True
            earlier = await tx.one("select_recorded_click", subject=subject, actor=actor, verb=verb)
            return None if earlier is None else (click_from_row(earlier), False)

    @finish_even_if_cancelled
    async def claim_clicks(
        self, *, now: datetime, limit: int, lease: timedelta
    ) -> list[RecordedClick]:
        """Lease up to ``limit`` recorded clicks nobody holds, oldest first, until
        ``now + lease``."""
        check_limit(limit, "clicks")
        async with self._backend.tx(write=True) as tx:
            rows = await tx.all("claim_clicks", now=now, lease=now + lease, limit=limit)
            return sorted((click_from_row(row) for row in rows), key=lambda c: c.id)

    @finish_even_if_cancelled
    async def settle_click(self, click_id: int) -> None:
        """The click was applied, or refused and its clicker told: remove it."""
        async with self._backend.tx(write=True) as tx:
            await tx.execute("settle_click", id=click_id)

    @finish_even_if_cancelled
    async def waiting_clicks(self) -> int:
        """How many clicks are recorded and not yet settled."""
        async with self._backend.tx(write=False) as tx:
            row = await tx.one("count_recorded_clicks")
            assert row is not None  # count(*) returns one row
            return int(row["waiting"])

    @finish_even_if_cancelled
    async def is_waiting(self, click_id: int) -> bool:
        """Whether the click is recorded and not yet settled (by any applier)."""
        async with self._backend.tx(write=False) as tx:
            return await tx.one("select_click", id=click_id) is not None
