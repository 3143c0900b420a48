"""The days a call file spans are counted on one clock, whatever zone each time is written in:
the same instants give the same per-day figures."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

from bot.operators.calls import read_calls
from bot.operators.report import Report
from bot.operators.simulate import simulate
from tests.callmix_example import settings

NOW = datetime(2031, 3, 14, 12, tzinfo=UTC)
ZONES = (UTC, timezone(timedelta(hours=9)), timezone(timedelta(hours=-8)))


def _calls(zoned: bool) -> str:
    start = datetime(2031, 3, 3, 8, tzinfo=UTC)
    lines = []
    for n in range(30):  # 08:00 to 17:40 UTC, one day
        at = start + timedelta(minutes=20 * n)
        written = at.astimezone(ZONES[n % 3]) if zoned else at
        lines.append(
            json.dumps(
                {
                    "agent": "billing-bot",
                    "operation": "payments.refund",
                    "requested_by": "U0BIL01",
                    "request": {
                        "payment_id": f"pay_{n}",
                        "customer": "cus_a1",
                        "amount_cents": 2_000,
                        "currency": "USD",
                        "reason": "late",
                    },
                    "at": written.isoformat(),
                    "verdict": "approved",
                }
            )
        )
    return "\n".join(lines)


async def test_times_written_in_other_zones_count_the_same_days(tmp_path: Path) -> None:
    config = settings(tmp_path)
    reports = []
    for zoned in (False, True):
        calls = read_calls(_calls(zoned), source="calls.jsonl")
        reports.append(Report.of(config, calls, await simulate(config, calls, store=None, now=NOW)))

    utc, zoned = reports
    assert utc.days == 1
    assert zoned.days == utc.days
    assert zoned.busiest() == utc.busiest()
