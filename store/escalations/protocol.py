"""What the store keeps of escalations: the EscalationStore protocol every backend gives through
``Store.escalations()`` (written once, store/escalations/verbs.py)."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Protocol

from store.audit import AuditEntry
from store.escalations.records import (
    Escalation,
    EscalationDelivery,
    EscalationResult,
    NewEscalation,
)

__all__ = ["EscalationStore"]


class EscalationStore(Protocol):
    async def create_escalation(self, new: NewEscalation) -> tuple[Escalation, bool]:
        """Store it open, with its audit entry and its Slack post. Returns (escalation, created).

        The same ``submission_key`` and fingerprint return the stored one (created False); the
        same key with another fingerprint raises EscalationConflict.
        """
        ...

    async def get_escalation(self, escalation_id: str) -> Escalation:
        """Raises EscalationNotFound."""
        ...

    async def find_escalation(self, agent: str, submission_key: str) -> Escalation | None: ...

    async def attach_escalation_message(
        self, escalation_id: str, channel: str, ts: str, *, now: datetime
    ) -> Escalation: ...

    async def take(self, escalation_id: str, *, actor: str, now: datetime) -> EscalationResult:
        """open or handed_back -> taken, owned by ``actor``; one owner however many click."""
        ...

    async def hand_back(
        self, escalation_id: str, *, actor: str, note: str, now: datetime
    ) -> EscalationResult:
        """taken (by ``actor``) -> handed_back, with the note for the agent."""
        ...

    async def resolve(
        self, escalation_id: str, *, actor: str, note: str | None, now: datetime
    ) -> EscalationResult:
        """open, handed_back, or taken by ``actor`` -> resolved."""
        ...

    async def reannounce_due(
        self, *, now: datetime, after: timedelta, most: int, limit: int = 100
    ) -> list[Escalation]:
        """Open escalations last announced ``after`` ago or longer and announced again fewer
        than ``most`` times: announce them again (a thread reply through the outbox), once per
        period however many sweeps run."""
        ...

    async def count_open(self, agent: str) -> int:
        """How many of ``agent``'s escalations nobody has taken yet (status open), counted in
        the database, so every instance sees the same number."""
        ...

    async def owned_by(self, user: str, *, limit: int = 20) -> list[Escalation]:
        """Escalations ``user`` has taken, oldest first."""
        ...

    async def escalation_log(self, escalation_id: str) -> list[AuditEntry]: ...

    # --- its outbox (the same verbs as the proposals' outbox) --------------------------------

    async def claim_deliveries(
        self, *, now: datetime, limit: int, lease: timedelta
    ) -> list[EscalationDelivery]: ...

    async def complete_delivery(self, delivery_id: int, *, now: datetime) -> None: ...

    async def retry_delivery(self, delivery_id: int, *, at: datetime, error: str) -> None: ...

    async def abandon_delivery(self, delivery_id: int, *, now: datetime, error: str) -> None: ...

    async def pending_deliveries(self) -> int: ...
