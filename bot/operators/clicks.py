"""What the asks of a day of calls cost people: clicks, digests and the wait batching adds.

Pure: given each asked call's arrival time, its rule's batch window and quorum, and what people
decided (when known), it forms the digests the server would post and counts the clicks.

* A rule without ``batch`` (or a call without an arrival time) is shown at once, alone: its
  approval costs one click per person its quorum needs; a rejection one click; a proposal left
  to expire none.
* A rule with ``batch = { window, max }`` holds its proposals per channel, rule and approver
  set: the first held proposal opens a window, and the digest is shown when the window closes
  or when it holds ``max`` proposals, whichever comes first. The digest's approval is one
  submit per person its quorum needs (**Review all…** approves every selected item); each item
  people rejected is one more click, and a digest nothing in it was approved costs no approval.
  Each held proposal waits from its arrival until its digest is shown: the added wait.
* A rule with ``then = { after, approvers }`` hands what nobody decided by ``after`` over to its
  backup roles (counted from when the message was shown, as the server counts it): a proposal
  left to expire, or decided at or after the hand-over, was offered to them, and the clicks
  that decided it after the hand-over are the backup roles' (the approval's when the earliest
  approved item in the message was decided after it; a rejection's by the item's own time). A
  decision without a time is taken as made before the hand-over.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Literal

from contracts.batching import BackupRoute, handover_time

__all__ = ["Asked", "Digest", "Verdict", "digests", "percentile"]

Verdict = Literal["approved", "rejected", "expired"]


@dataclass(frozen=True, slots=True)
class Asked:
    """One call the policy asks a person about."""

    index: int  #: the call's position in the replay
    at: datetime | None  #: when it arrived; None: unknown, shown at once
    rule: str
    channel: str
    approvers: tuple[str, ...]
    quorum: int
    window: timedelta | None  #: the rule's batch window; None: shown at once
    max: int  #: the most a digest holds (1 without a window)
    verdict: Verdict | None = None  #: what people decided; None: unknown, taken as approved
    decided_at: datetime | None = None  #: when people decided; None: unknown
    then: BackupRoute | None = None  #: the rule's backup approvers
    expires_after: timedelta | None = None  #: the rule's expiry, counted from showing


@dataclass
class Digest:
    """What people see as one message: a digest of held proposals, or one proposal alone."""

    rule: str
    approvers: tuple[str, ...]
    quorum: int
    shown_at: datetime | None
    items: list[Asked] = field(default_factory=list)

    @property
    def clicks(self) -> int:
        """The submits it costs: the quorum's for the approval (when anything in it is
        approved), one per rejected item."""
        rejected = sum(1 for item in self.items if item.verdict == "rejected")
        approved = any(item.verdict in (None, "approved") for item in self.items)
        return (self.quorum if approved else 0) + rejected

    @property
    def handover_at(self) -> datetime | None:
        """When what nobody decided is offered to the rule's backup roles (None: the rule has
        none, or when it is shown is unknown)."""
        first = self.items[0]
        shown = self.shown_at if self.shown_at is not None else first.at
        if first.then is None or first.expires_after is None or shown is None:
            return None
        return handover_time(first.then, shown_at=shown, expires_at=shown + first.expires_after)

    def handed_over(self) -> list[Asked]:
        """The items offered to the backup roles: left to expire, or decided at or after the
        hand-over."""
        at = self.handover_at
        if at is None:
            return []
        return [
            item
            for item in self.items
            if item.verdict == "expired" or (item.decided_at is not None and item.decided_at >= at)
        ]

    def clicks_by_role(self) -> Counter[str]:
        """Its clicks by who made them: the approvers' roles, or the backup roles' for what was
        decided after the hand-over (see the module's notes)."""
        primary = ", ".join(self.approvers)
        at = self.handover_at
        backup = None if self.items[0].then is None else ", ".join(self.items[0].then.approvers)

        def whose(decided_at: datetime | None) -> str:
            late = at is not None and decided_at is not None and decided_at >= at
            return backup if late and backup is not None else primary

        clicks: Counter[str] = Counter()
        approved = [item for item in self.items if item.verdict in (None, "approved")]
        if approved:
            times = [item.decided_at for item in approved]
            first = None if None in times else min(t for t in times if t is not None)
            clicks[whose(first)] += self.quorum
        for item in self.items:
            if item.verdict == "rejected":
                clicks[whose(item.decided_at)] += 1
        return clicks

    def waits(self) -> list[timedelta]:
        """How long each item waited to be shown (zero for one shown at once)."""
        if self.shown_at is None:
            return [timedelta(0) for _ in self.items]
        return [self.shown_at - item.at for item in self.items if item.at is not None]


def digests(asked: Iterable[Asked]) -> list[Digest]:
    """The messages the asks become, in the order they are shown."""
    ordered = sorted(
        asked, key=lambda a: (a.at is None, a.at or datetime.min.replace(tzinfo=UTC), a.index)
    )
    shown: list[Digest] = []
    open_: dict[tuple[str, str, tuple[str, ...]], tuple[datetime, Digest]] = {}
    for item in ordered:
        if item.window is None or item.at is None or item.max <= 1:
            shown.append(Digest(item.rule, item.approvers, item.quorum, item.at, [item]))
            continue
        key = (item.channel, item.rule, item.approvers)
        current = open_.get(key)
        if current is not None and item.at >= current[0] + item.window:
            _close(open_, key, current[0] + item.window, shown)
            current = None
        if current is None:
            current = (item.at, Digest(item.rule, item.approvers, item.quorum, None))
            open_[key] = current
        current[1].items.append(item)
        if len(current[1].items) >= item.max:
            _close(open_, key, item.at, shown)
    for key, (opened, digest) in list(open_.items()):
        window = digest.items[0].window
        assert window is not None
        _close(open_, key, opened + window, shown)
    return shown


def _close(
    open_: dict[tuple[str, str, tuple[str, ...]], tuple[datetime, Digest]],
    key: tuple[str, str, tuple[str, ...]],
    at: datetime,
    shown: list[Digest],
) -> None:
    _, digest = open_.pop(key)
    digest.shown_at = at
    shown.append(digest)


def percentile(values: Sequence[timedelta], share: float) -> timedelta | None:
    """The nearest-rank percentile (``share`` from 0 to 1); None for no values."""
    if not values:
        return None
    ordered = sorted(values)
    rank = max(1, math.ceil(share * len(ordered)))
    return ordered[rank - 1]
