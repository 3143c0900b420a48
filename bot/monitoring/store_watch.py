"""What the log says while the store is away: one line when it stops answering, a reminder now
and then while it stays away, one line when it answers again. An outage is expected, so no
traceback: the background loops (the outbox, the sweeps) report to one :class:`StoreWatch`
instead of logging each failed round."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from contracts.durations import spoken_duration
from store.base import StoreUnavailable

__all__ = ["REMIND_EVERY_SECONDS", "StoreWatch"]

log = logging.getLogger(__name__)

#: How often a store that stays away is mentioned again.
REMIND_EVERY_SECONDS = 60.0


class StoreWatch:
    """Whether the store answered the last time a background loop asked it, and the log lines
    that say when that changes."""

    def __init__(
        self,
        *,
        remind_every: float = REMIND_EVERY_SECONDS,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self._remind_every = remind_every
        self._monotonic = monotonic
        self._away_since: float | None = None
        self._reminded_at = 0.0
        #: how many questions went unanswered so far (a loop compares before and after a round)
        self.unanswered_count = 0
        #: called once each time the store answers again after an outage
        self._on_back: list[Callable[[], None]] = []

    @property
    def away(self) -> bool:
        """The last question a loop asked the store went unanswered."""
        return self._away_since is not None

    def on_back(self, call: Callable[[], None]) -> None:
        """Call ``call`` whenever the store answers again after an outage."""
        self._on_back.append(call)

    def unanswered(self, error: StoreUnavailable, *, where: str) -> None:
        """``where`` (the outbox, the sweep) asked the store and got no answer."""
        now = self._monotonic()
        self.unanswered_count += 1
        if self._away_since is None:
            self._away_since = self._reminded_at = now
            log.warning(
                "the store is not answering (%s: %s); decisions, posts and replies wait until "
                "it is back, and nothing acknowledged is lost",
                where,
                error,
                extra={"event": "store.away"},
            )
        elif now - self._reminded_at >= self._remind_every:
            self._reminded_at = now
            log.warning(
                "the store has not answered for %s (%s: %s)",
                spoken_duration(now - self._away_since),
                where,
                error,
                extra={"event": "store.still_away"},
            )

    def answered(self) -> None:
        """A loop's question to the store was answered."""
        if self._away_since is None:
            return
        away_for = self._monotonic() - self._away_since
        self._away_since = None
        log.info(
            "the store answers again after %s away; the work that waited goes on now",
            spoken_duration(away_for),
            extra={"event": "store.back"},
        )
        for call in self._on_back:
            call()
