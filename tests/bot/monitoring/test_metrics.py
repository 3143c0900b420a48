"""Delivery attempts are counted once each: delivered, or failed when the delivery raises (and
the error still reaches the outbox, which retries)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime

import pytest

from bot.monitoring.metrics import CountedCoalescer, Metrics
from bot.outbound.outbox import Job
from store.proposals import Delivery, Proposal


def _metrics() -> Metrics:
    return Metrics(version="test", clock=lambda: datetime(2026, 12, 4, tzinfo=UTC))


def _attempts(metrics: Metrics, outbox: str, lane: str, result: str) -> float:
    value = metrics.registry.get_sample_value(
        "countersign_outbox_deliveries_total", {"outbox": outbox, "lane": lane, "result": result}
    )
    return value or 0.0


async def test_a_delivery_that_raises_is_counted_failed_and_one_that_returns_delivered() -> None:
    metrics = _metrics()

    async def deliver(item: str) -> None:
        if item == "bad":
            raise OSError("Slack did not answer")

    counted = metrics.delivering("escalations", deliver)
    await counted("good")
    with pytest.raises(OSError, match="did not answer"):
        await counted("bad")

    assert _attempts(metrics, "escalations", "slack", "delivered") == 1
    assert _attempts(metrics, "escalations", "slack", "failed") == 1
    assert metrics.last_delivery is not None


class _OneJob:
    def __init__(self, fails: bool) -> None:
        self.fails = fails

    async def split(
        self, due: Sequence[Delivery], *, full: bool, proposals: Mapping[str, Proposal]
    ) -> tuple[list[Job], list[Delivery]]:
        async def run() -> None:
            if self.fails:
                raise OSError("Slack did not answer")

        return [Job((), run)], []


async def test_a_coalesced_job_counts_once_as_delivered_or_failed() -> None:
    metrics = _metrics()
    for fails in (False, True, True):
        (job,), _ = await CountedCoalescer(_OneJob(fails), metrics).split(
            (), full=False, proposals={}
        )
        if fails:
            with pytest.raises(OSError):
                await job.run()
        else:
            await job.run()

    assert _attempts(metrics, "proposals", "slack", "delivered") == 1
    assert _attempts(metrics, "proposals", "slack", "failed") == 2
