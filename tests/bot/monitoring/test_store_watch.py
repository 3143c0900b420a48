"""The log during a store outage: one line when it goes, a reminder a minute while it stays
away (not a line per failed round), one line when it is back; never a traceback."""

from __future__ import annotations

import logging

import pytest

from bot.monitoring.store_watch import StoreWatch
from store.base import StoreUnavailable


class Ticks:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_an_outage_is_one_line_a_reminder_a_minute_and_one_line_when_back(
    caplog: pytest.LogCaptureFixture,
) -> None:
    ticks = Ticks()
    back: list[str] = []
    watch = StoreWatch(remind_every=60, monotonic=ticks)
    watch.on_back(lambda: back.append("back"))
    refused = StoreUnavailable("cannot reach PostgreSQL: [Errno 111] Connection refused")

    with caplog.at_level(logging.DEBUG, logger="bot.monitoring.store_watch"):
        watch.answered()  # nothing to say while it answers
        for _ in range(130):  # two rounds a second for 65 seconds
            watch.unanswered(refused, where="the outbox")
            ticks.now += 0.5
        assert watch.away
        ticks.now += 10
        watch.answered()
        watch.answered()

    lines = [(r.levelname, r.getMessage()) for r in caplog.records]
    assert lines == [
        (
            "WARNING",
            "the store is not answering (the outbox: cannot reach PostgreSQL: [Errno 111] "
            "Connection refused); decisions, posts and replies wait until it is back, and "
            "nothing acknowledged is lost",
        ),
        (
            "WARNING",
            "the store has not answered for 1 minute (the outbox: cannot reach PostgreSQL: "
            "[Errno 111] Connection refused)",
        ),
        ("INFO", "the store answers again after 1 minute away; the work that waited goes on now"),
    ]
    assert not [r for r in caplog.records if r.exc_info]
    assert back == ["back"]
    assert not watch.away
